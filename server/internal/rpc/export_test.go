package rpc

// IsNumber lets the external tests walk the API's number fields as Validate does.
var IsNumber = isNumber
