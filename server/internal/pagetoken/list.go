package pagetoken

// DefaultLimit is a page's size when the request asks for none.
const DefaultLimit = 50

// List reads one page of a list: it decodes token ("" is the first page), has fetch read at
// most limit rows (DefaultLimit when limit <= 0) after the cursor (nil on the first page), and
// returns them with the next page's token, "" when fewer than limit rows came back (the last
// page). cursor names a row as the next token carries it. fetch's error is returned as it is.
func List[C Cursor, R any](list, token string, limit int, fetch func(after *C, limit int) ([]R, error), cursor func(R) C) ([]R, string, error) {
	var after *C
	if token != "" {
		c, err := Decode[C](list, token)
		if err != nil {
			return nil, "", err
		}
		after = &c
	}
	if limit <= 0 {
		limit = DefaultLimit
	}
	rows, err := fetch(after, limit)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(rows) == limit {
		next = Encode(list, cursor(rows[len(rows)-1]))
	}
	return rows, next, nil
}
