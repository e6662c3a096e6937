package legacy_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/rpc"
)

// badRow is one bad request and the error it must get. Nothing may be written.
type badRow struct {
	name        string
	method      string // defaults to the group's
	path        string // defaults to the group's
	contentType string
	body        string
	status      int
	code        string
	// field is the expected data.field; "" means data.field must be absent.
	field string
	// msg must appear in the message (which, with a field, must also start with "<field>: ").
	msg string
}

type badGroup struct {
	name, method, path, bearer string
	rows                       []badRow
}

// conflict is a session body (sessionBody with extra) refused with CONFLICT on field.
func conflict(name string, extra map[string]any, field, msg string) badRow {
	return badRow{name: name, body: sessionBody(extra), status: http.StatusConflict, code: "CONFLICT", field: field, msg: msg}
}

func invalid(name, body, field, msg string) badRow {
	return badRow{name: name, body: body, status: http.StatusBadRequest, code: "INVALID_ARGUMENT", field: field, msg: msg}
}

// enumRows are the rows an enum field refuses: each of values (a case name and a string that
// is not a value it takes, refused with msg), its number (a valid value's), and the field
// missing from without.
func enumRows(field, msg string, number int, without string, values ...[2]string) []badRow {
	rows := make([]badRow, 0, len(values)+2)
	for _, v := range values {
		rows = append(rows, invalid(field+"/"+v[0], `{"`+field+`":"`+v[1]+`"}`, field, msg))
	}
	return append(rows,
		invalid(field+"/number", `{"`+field+`":`+strconv.Itoa(number)+`}`, field, "must be a string"),
		invalid("missing/"+field, without, field, "value is required"))
}

// padTo returns a JSON object with an unknown field "pad", exactly n bytes long.
func padTo(n int) string {
	const frame = `{"pad":""}`
	return `{"pad":"` + strings.Repeat("p", n-len(frame)) + `"}`
}

// bodyRows are the bad bodies every JSON endpoint refuses, whatever its fields. valid is a
// body the endpoint accepts.
func bodyRows(valid string) []badRow { return bodyRowsUpTo(valid, rpc.MaxRequestBytes) }

// bodyRowsUpTo are bodyRows for a route whose bodies may be at most limit bytes.
func bodyRowsUpTo(valid string, limit int) []badRow {
	jsonErr := func(name, body, msg string) badRow { return invalid(name, body, "", msg) }
	return []badRow{
		jsonErr("malformed/truncated", `{"externalUserId":`, "malformed JSON"),
		jsonErr("malformed/single_quotes", `{'externalUserId':'u'}`, "malformed JSON"),
		jsonErr("malformed/trailing_comma", `{"externalUserId":"u",}`, "malformed JSON"),
		jsonErr("malformed/bare_word", `hello`, "malformed JSON"),
		jsonErr("malformed/bom", "\ufeff"+valid, "malformed JSON"),
		jsonErr("trailing/garbage", valid+` garbage`, "unexpected data after the object"),
		jsonErr("trailing/second_object", valid+`{}`, "unexpected data after the object"),
		jsonErr("trailing/closing_brace", valid+`}`, "unexpected data after the object"),
		jsonErr("not_object/array", `[`+valid+`]`, "must be a JSON object"),
		jsonErr("not_object/empty_array", `[]`, "must be a JSON object"),
		jsonErr("not_object/string", `"hello"`, "must be a JSON object"),
		jsonErr("not_object/null", `null`, "must be a JSON object"),
		jsonErr("not_object/number", `42`, "must be a JSON object"),
		jsonErr("not_object/true", `true`, "must be a JSON object"),
		jsonErr("empty/body", ``, "request body is empty"),
		jsonErr("empty/whitespace", " \n\t ", "request body is empty"),
		invalid("unknown_field", strings.Replace(valid, "{", `{"bogus":1,`, 1), "bogus", "unknown field"),
		invalid("unknown_field_null", strings.Replace(valid, "{", `{"bogus":null,`, 1), "bogus", "unknown field"),
		{name: "content_type/text_plain", contentType: "text/plain", body: valid,
			status: http.StatusUnsupportedMediaType, code: "UNSUPPORTED_MEDIA_TYPE", msg: "Content-Type must be application/json"},
		{name: "content_type/form", contentType: "application/x-www-form-urlencoded", body: valid,
			status: http.StatusUnsupportedMediaType, code: "UNSUPPORTED_MEDIA_TYPE", msg: "Content-Type must be application/json"},
		{name: "content_type/json_suffix", contentType: "application/problem+json", body: valid,
			status: http.StatusUnsupportedMediaType, code: "UNSUPPORTED_MEDIA_TYPE", msg: "Content-Type must be application/json"},
		{name: "content_type/garbled", contentType: "application/json; charset", body: valid,
			status: http.StatusUnsupportedMediaType, code: "UNSUPPORTED_MEDIA_TYPE", msg: "Content-Type must be application/json"},
		{name: "content_type/missing", contentType: noContentType, body: valid,
			status: http.StatusUnsupportedMediaType, code: "UNSUPPORTED_MEDIA_TYPE", msg: "Content-Type must be application/json"},
		// The limit exactly is read (and refused for its unknown field); one byte more is too large.
		invalid("size/exactly_the_limit", padTo(limit), "pad", "unknown field"),
		{name: "size/limit_plus_one", body: padTo(limit + 1),
			status: http.StatusRequestEntityTooLarge, code: "PAYLOAD_TOO_LARGE", msg: fmt.Sprintf("exceeds %d bytes", limit)},
		{name: "size/1MiB", body: padTo(1 << 20),
			status: http.StatusRequestEntityTooLarge, code: "PAYLOAD_TOO_LARGE", msg: fmt.Sprintf("exceeds %d bytes", limit)},
		{name: "size/1MiB_wrong_content_type", contentType: "text/plain", body: padTo(1 << 20),
			status: http.StatusRequestEntityTooLarge, code: "PAYLOAD_TOO_LARGE", msg: fmt.Sprintf("exceeds %d bytes", limit)},
	}
}

// sessionRows are the field-level bad inputs of /session/deposit and /session/withdraw.
func sessionRows() []badRow {
	rows := bodyRows(sessionBody(nil))
	with := func(name string, extra map[string]any, field, msg string) {
		rows = append(rows, invalid(name, sessionBody(extra), field, msg))
	}
	for _, f := range []string{"externalUserId", "lang", "platformFiatCurrency", "userBalance", "amount"} {
		with("missing/"+f, map[string]any{f: nil}, f, "value is required")
		with("empty/"+f, map[string]any{f: ""}, f, "value is required")
		rows = append(rows, invalid("null/"+f, strings.Replace(sessionBody(map[string]any{f: nil}), "{", `{"`+f+`":null,`, 1), f, "value is required"))
	}
	// Wrong JSON types.
	with("type/externalUserId_number", map[string]any{"externalUserId": 42}, "externalUserId", "must be a string")
	with("type/amount_number", map[string]any{"amount": 25}, "amount", "must be a string")
	with("type/amount_float", map[string]any{"amount": 25.5}, "amount", "must be a string")
	with("type/userBalance_bool", map[string]any{"userBalance": true}, "userBalance", "must be a string")
	with("type/lang_array", map[string]any{"lang": []string{"en"}}, "lang", "must be a string")
	with("type/email_object", map[string]any{"email": map[string]any{"a": 1}}, "email", "must be a string")
	with("type/operatorReference_number", map[string]any{"operatorReference": 7}, "operatorReference", "must be a string")
	// Field names are the protobuf JSON names only.
	with("name/snake_case", map[string]any{"externalUserId": nil, "external_user_id": "u"}, "external_user_id", "unknown field")
	with("name/wrong_case", map[string]any{"Amount": "1"}, "Amount", "unknown field")
	// Amounts: positive decimals with at most 18 decimals.
	for _, a := range []string{"abc", "-5", "-0.01", "0", "0.00", "000", "1.1234567890123456789", "1e3", " 25", "25 ",
		"25.", ".5", "1,000.00", "+5", "0x10", "NaN", "Infinity", "123456789012345678901", "２５"} {
		with(fmt.Sprintf("amount/%q", a), map[string]any{"amount": a}, "amount", "must be a positive decimal string")
	}
	with("amount/too_long", map[string]any{"amount": "1." + strings.Repeat("0", 39) + "1"}, "amount", "")
	for _, b := range []string{"ten", "1.2.3", "--1", "1e2"} {
		with(fmt.Sprintf("userBalance/%q", b), map[string]any{"userBalance": b}, "userBalance", "must be a decimal string")
	}
	// Strings: length and control characters.
	with("externalUserId/129_chars", map[string]any{"externalUserId": strings.Repeat("u", 129)}, "externalUserId", "at most 128 characters")
	with("externalUserId/129_runes", map[string]any{"externalUserId": strings.Repeat("é", 129)}, "externalUserId", "at most 128 characters")
	with("externalUserId/control_char", map[string]any{"externalUserId": "user\u0001"}, "externalUserId", "control characters")
	with("externalUserId/nul", map[string]any{"externalUserId": "user\u0000"}, "externalUserId", "NUL characters")
	with("externalUserId/newline", map[string]any{"externalUserId": "user\n1"}, "externalUserId", "control characters")
	with("externalUserId/del", map[string]any{"externalUserId": "user\u007f"}, "externalUserId", "control characters")
	rows = append(rows, invalid("externalUserId/raw_control_byte", strings.Replace(sessionBody(nil), `"user-1"`, "\"user\x01\"", 1), "", "malformed JSON"))
	with("operatorReference/control_char", map[string]any{"operatorReference": "order\t1"}, "operatorReference", "control characters")
	with("operatorReference/129_chars", map[string]any{"operatorReference": strings.Repeat("r", 129)}, "operatorReference", "at most 128 characters")
	with("email/not_an_email", map[string]any{"email": "not-an-email"}, "email", "valid email")
	with("email/no_domain", map[string]any{"email": "user@"}, "email", "valid email")
	with("email/display_name", map[string]any{"email": "User <user@example.com>"}, "email", "valid email")
	with("email/too_long", map[string]any{"email": strings.Repeat("e", 250) + "@example.com"}, "email", "")
	for _, c := range []string{"US", "USDT", "U$D", "123", "€UR"} {
		with(fmt.Sprintf("currency/%q", c), map[string]any{"platformFiatCurrency": c}, "platformFiatCurrency", "three-letter currency code")
	}
	// Well-formed, but without a rate: a deposit could never be valued.
	for _, c := range []string{"JPY", "XYZ", "jpy"} {
		with("currency/unpriced_"+c, map[string]any{"platformFiatCurrency": c}, "platformFiatCurrency",
			strings.ToUpper(c)+" has no exchange rate here; supported currencies: EUR, GBP, USD")
	}
	for _, l := range []string{"english!", "e", "en US", "en-", strings.Repeat("a", 36)} {
		with(fmt.Sprintf("lang/%q", l), map[string]any{"lang": l}, "lang", "")
	}
	return rows
}

func TestBadInput(t *testing.T) {
	env := apptest.StartAPI(t)
	_, key := env.Operator(t, domain.OperatorSettings{})
	adm, adminToken := env.Admin(t, "")
	depSid, _, _ := openSession(t, env, key, "deposit", map[string]any{"externalUserId": "bad-input-dep"})
	wdSid, _, _ := openSession(t, env, key, "withdraw", map[string]any{"externalUserId": "bad-input-wd"})
	openSession(t, env, key, "withdraw", map[string]any{"externalUserId": "bad-input-ref", "operatorReference": "withdraw-ref"})
	openSession(t, env, key, "deposit", map[string]any{"externalUserId": "bad-input-ref", "operatorReference": "deposit-ref"})
	someID := "7a8b9c0d-1111-4222-8333-444455556666"

	depositorRows := bodyRows(`{"externalUserId":"d-1","email":"d@example.com"}`)
	depositorRows = append(depositorRows,
		invalid("missing/externalUserId", `{"email":"d@example.com"}`, "externalUserId", "value is required"),
		invalid("empty/externalUserId", `{"externalUserId":""}`, "externalUserId", "value is required"),
		invalid("type/externalUserId_number", `{"externalUserId":12345}`, "externalUserId", "must be a string"),
		invalid("type/email_bool", `{"externalUserId":"d-1","email":false}`, "email", "must be a string"),
		invalid("externalUserId/129_chars", `{"externalUserId":"`+strings.Repeat("d", 129)+`"}`, "externalUserId", "at most 128 characters"),
		invalid("externalUserId/control_char", `{"externalUserId":"d\u001b[31m"}`, "externalUserId", "control characters"),
		invalid("email/not_an_email", `{"externalUserId":"d-1","email":"d.example.com"}`, "email", "valid email"),
		invalid("name/snake_case", `{"external_user_id":"d-1"}`, "external_user_id", "unknown field"),
	)

	login := func(email, password string) string {
		return mustJSON(map[string]any{"email": email, "password": password})
	}
	loginRows := bodyRowsUpTo(login(adm.Email, apptest.AdminPassword), rpc.MaxSmallRequestBytes)
	loginRows = append(loginRows,
		invalid("missing/email", `{"password":"x"}`, "email", "value is required"),
		invalid("missing/password", `{"email":"`+adm.Email+`"}`, "password", "value is required"),
		invalid("empty/password", login(adm.Email, ""), "password", "value is required"),
		invalid("type/password_number", `{"email":"`+adm.Email+`","password":1234}`, "password", "must be a string"),
		invalid("type/totp_number", `{"email":"`+adm.Email+`","password":"x","totp":123456}`, "totp", "must be a string"),
		invalid("totp/five_digits", `{"email":"`+adm.Email+`","password":"x","totp":"12345"}`, "totp", "does not match"),
		invalid("totp/letters", `{"email":"`+adm.Email+`","password":"x","totp":"abcdef"}`, "totp", "does not match"),
		invalid("email/255_chars", login(strings.Repeat("a", 243)+"@coffer.test", "x"), "email", "at most 254 characters"),
		invalid("password/1025_chars", login(adm.Email, strings.Repeat("p", 1025)), "password", "at most 1024 characters"),
	)

	address := func(sid, currency string, chainID any) string {
		return mustJSON(map[string]any{"sid": sid, "currency": currency, "chainId": chainID})
	}
	addressRows := bodyRows(address(depSid, "USDT", 1337))
	addressRows = append(addressRows,
		invalid("missing/sid", `{"currency":"USDT","chainId":1337}`, "sid", "value is required"),
		invalid("missing/currency", `{"sid":"`+depSid+`","chainId":1337}`, "currency", "value is required"),
		invalid("missing/chainId", `{"sid":"`+depSid+`","currency":"USDT"}`, "chainId", "value is required"),
		invalid("sid/not_a_uuid", address("not-a-uuid", "USDT", 1337), "sid", "valid UUID"),
		invalid("sid/truncated_uuid", address(depSid[:35], "USDT", 1337), "sid", "valid UUID"),
		invalid("sid/braced_uuid", address("{"+depSid+"}", "USDT", 1337), "sid", "valid UUID"),
		invalid("type/sid_number", `{"sid":1,"currency":"USDT","chainId":1337}`, "sid", "must be a string"),
		invalid("type/chainId_string", address(depSid, "USDT", "1337"), "chainId", "must be a number"),
		invalid("type/chainId_bool", address(depSid, "USDT", true), "chainId", "must be a number"),
		invalid("type/chainId_float", `{"sid":"`+depSid+`","currency":"USDT","chainId":1337.5}`, "chainId", "must be an integer"),
		invalid("type/chainId_exponent", `{"sid":"`+depSid+`","currency":"USDT","chainId":1e3}`, "chainId", "must be an integer"),
		invalid("type/chainId_overflow", `{"sid":"`+depSid+`","currency":"USDT","chainId":99999999999999999999}`, "chainId", "must be an integer"),
		invalid("type/currency_number", `{"sid":"`+depSid+`","currency":6,"chainId":1337}`, "currency", "must be a string"),
		// Zero is how a number left out reads (the same on the wire): required, as "" is.
		invalid("chainId/zero", address(depSid, "USDT", 0), "chainId", "value is required"),
		invalid("chainId/negative", address(depSid, "USDT", -1), "chainId", "greater than 0"),
		invalid("currency/17_chars", address(depSid, strings.Repeat("T", 17), 1337), "currency", "at most 16 characters"),
	)

	statusPath := "/admin/withdrawals/" + someID + "/status"
	statusRows := append(bodyRows(`{"status":"PROCESSING","adminNote":"ok"}`),
		enumRows("status", "must be PROCESSING, COMPLETED or REJECTED", 2, `{"adminNote":"x"}`,
			[2]string{"unknown", "DONE"}, [2]string{"lowercase", "processing"}, [2]string{"UNSPECIFIED", "UNSPECIFIED"},
			[2]string{"full_name_UNSPECIFIED", "WITHDRAWAL_STATUS_UNSPECIFIED"})...)
	statusRows = append(statusRows,
		// PENDING is a status, but not one an admin may move a withdrawal to.
		invalid("status/PENDING", `{"status":"PENDING"}`, "status", ""),
		invalid("status/full_name_PENDING", `{"status":"WITHDRAWAL_STATUS_PENDING"}`, "status", ""),
		invalid("status/AWAITING_APPROVAL", `{"status":"AWAITING_APPROVAL"}`, "status", ""),
		invalid("withdrawRequestId_in_body", `{"status":"PROCESSING","withdrawRequestId":"`+someID+`"}`, "withdrawRequestId", "unknown field"),
		invalid("adminNote/2001_chars", `{"status":"PROCESSING","adminNote":"`+strings.Repeat("n", 2001)+`"}`, "adminNote", "at most 2000 characters"),
		badRow{name: "path/id_not_uuid", path: "/admin/withdrawals/abc/status", body: `{"status":"PROCESSING"}`,
			status: http.StatusBadRequest, code: "INVALID_ARGUMENT", field: "withdrawRequestId", msg: "valid UUID"},
	)

	decisionRows := append(bodyRows(`{"decision":"APPROVE"}`), enumRows("decision", "must be one of APPROVE, REJECT", 1, `{"reason":"x"}`, [2]string{"MAYBE", "MAYBE"},
		[2]string{"lowercase", "approve"}, [2]string{"UNSPECIFIED", "DECISION_UNSPECIFIED"}, [2]string{"other_enum", "WITHDRAWAL_STATUS_COMPLETED"})...)
	decisionRows = append(decisionRows,
		invalid("reason/501_chars", `{"decision":"REJECT","reason":"`+strings.Repeat("r", 501)+`"}`, "reason", "at most 500 characters"),
		invalid("withdrawRequestId_in_body", `{"decision":"APPROVE","withdrawRequestId":"`+someID+`"}`, "withdrawRequestId", "unknown field"),
	)

	// POST /withdraw/direct-transfer: the user picks only the destination, network and token;
	// the amount is the session's (an "amount" in the body is an unknown field, not ignored).
	transfer := func(sid, addr, currency string, chainID any) string {
		return mustJSON(map[string]any{"sid": sid, "address": addr, "currency": currency, "chainId": chainID})
	}
	const dest = "0x52908400098527886E0F7030069857D2E4169EE7"
	transferRows := append(bodyRows(transfer(wdSid, dest, "USDT", 1337)),
		invalid("missing/sid", `{"address":"`+dest+`","currency":"USDT","chainId":1337}`, "sid", "value is required"),
		invalid("missing/address", `{"sid":"`+wdSid+`","currency":"USDT","chainId":1337}`, "address", "value is required"),
		invalid("missing/currency", `{"sid":"`+wdSid+`","address":"`+dest+`","chainId":1337}`, "currency", "value is required"),
		invalid("missing/chainId", `{"sid":"`+wdSid+`","address":"`+dest+`","currency":"USDT"}`, "chainId", "value is required"),
		invalid("amount_in_body", strings.Replace(transfer(wdSid, dest, "USDT", 1337), "{", `{"amount":"1000000",`, 1), "amount", "unknown field"),
		invalid("fiatAmount_in_body", strings.Replace(transfer(wdSid, dest, "USDT", 1337), "{", `{"fiatAmount":"1",`, 1), "fiatAmount", "unknown field"),
		invalid("type/chainId_string", transfer(wdSid, dest, "USDT", "1337"), "chainId", "must be a number"),
		invalid("type/chainId_exponent", `{"sid":"`+wdSid+`","address":"`+dest+`","currency":"USDT","chainId":1.337e3}`, "chainId", "must be an integer"),
		invalid("type/address_number", `{"sid":"`+wdSid+`","address":1,"currency":"USDT","chainId":1337}`, "address", "must be a string"),
		invalid("type/unknown", strings.Replace(transfer(wdSid, dest, "USDT", 1337), "{", `{"type":"WIRE",`, 1), "type",
			"must be one of DIRECT_TRANSFER, OFF_RAMP"),
		invalid("type/number", strings.Replace(transfer(wdSid, dest, "USDT", 1337), "{", `{"type":1,`, 1), "type", "must be a string"),
		invalid("chainId/zero", transfer(wdSid, dest, "USDT", 0), "chainId", "value is required"),
		invalid("chainId/negative", transfer(wdSid, dest, "USDT", -1337), "chainId", "greater than 0"),
		invalid("chainId/not_configured", transfer(wdSid, dest, "USDT", 1), "chainId", "not supported"),
		invalid("currency/not_on_chain", transfer(wdSid, dest, "DOGE", 1337), "currency", "DOGE is not available"),
		invalid("currency/17_chars", transfer(wdSid, dest, strings.Repeat("T", 17), 1337), "currency", "at most 16 characters"),
		invalid("address/no_0x", transfer(wdSid, dest[2:], "USDT", 1337), "address", ""),
		invalid("address/short", transfer(wdSid, dest[:41], "USDT", 1337), "address", ""),
		invalid("address/not_hex", transfer(wdSid, "0x"+strings.Repeat("g", 40), "USDT", 1337), "address", ""),
		invalid("address/bad_checksum", transfer(wdSid, strings.Replace(dest, "E7", "e7", 1), "USDT", 1337), "address", "checksum mismatch"),
		invalid("address/zero", transfer(wdSid, "0x"+strings.Repeat("0", 40), "USDT", 1337), "address", "zero address"),
		invalid("address/token_contract", transfer(wdSid, "0x00000000000000000000000000000000000000a1", "USDT", 1337), "address", "token contract"),
		invalid("sid/not_a_uuid", transfer("not-a-uuid", dest, "USDT", 1337), "sid", "valid UUID"),
		badRow{name: "session/deposit_sid", body: transfer(depSid, dest, "USDT", 1337), status: http.StatusForbidden, code: "FORBIDDEN",
			msg: "this is a deposit session"},
		badRow{name: "session/unknown_sid", body: transfer(someID, dest, "USDT", 1337), status: http.StatusUnauthorized, code: "UNAUTHENTICATED"},
	)

	groups := []badGroup{
		{name: "session_deposit", method: "POST", path: "/session/deposit", bearer: key, rows: append(sessionRows(),
			// Conflict: the reference belongs to a withdraw session. See TestConflictWritesNothing.
			conflict("conflict/reference_of_withdraw_session", map[string]any{"externalUserId": "bad-input-ref", "operatorReference": "withdraw-ref"},
				"operatorReference", `"withdraw-ref" already names an open withdraw session; use a new reference for a deposit session`),
			// The reference names a live deposit session of bad-input-ref for 25.00 USD.
			conflict("conflict/reference_other_user", map[string]any{"externalUserId": "someone-else", "operatorReference": "deposit-ref"},
				"externalUserId", `operatorReference "deposit-ref" already names an open deposit session of another user`),
			conflict("conflict/reference_other_amount", map[string]any{"externalUserId": "bad-input-ref", "operatorReference": "deposit-ref",
				"amount": "25.01"}, "amount", `already names an open deposit session for 25.00 USD`),
			conflict("conflict/reference_other_currency", map[string]any{"externalUserId": "bad-input-ref", "operatorReference": "deposit-ref",
				"platformFiatCurrency": "eur"}, "platformFiatCurrency", `already names an open deposit session in USD`))},
		{name: "session_withdraw", method: "POST", path: "/session/withdraw", bearer: key, rows: append(sessionRows(),
			conflict("conflict/reference_of_deposit_session", map[string]any{"operatorReference": "deposit-ref"},
				"operatorReference", `"deposit-ref" already names an open deposit session; use a new reference for a withdraw session`))},
		{name: "depositor_create", method: "POST", path: "/depositor/create", bearer: key, rows: depositorRows},
		{name: "admin_login", method: "POST", path: "/admin/login", rows: loginRows},
		{name: "depositor_address", method: "POST", path: "/depositor/address", rows: append(addressRows,
			invalid("session/withdraw_sid", address(wdSid, "USDT", 1337), "", ""))},
		{name: "admin_withdrawal_status", method: "PATCH", path: statusPath, bearer: adminToken, rows: statusRows},
		{name: "withdraw_decision", method: "POST", path: "/withdraw/" + someID + "/decision", bearer: key, rows: decisionRows},
		{name: "withdraw_direct_transfer", method: "POST", path: "/withdraw/direct-transfer", rows: transferRows},
	}
	// The withdraw-session sid on /depositor/address is FORBIDDEN, not INVALID_ARGUMENT.
	last := &groups[4].rows[len(groups[4].rows)-1]
	last.status, last.code, last.msg = http.StatusForbidden, "FORBIDDEN", "this is a withdraw session"

	tables := []string{"sessions", "depositors", "admin_sessions", "operator_references", "withdrawals", "withdrawal_transitions",
		"webhook_events", "rate_limits"}
	n := 0
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			seen := map[string]bool{}
			for _, row := range g.rows {
				if seen[row.name] {
					t.Fatalf("duplicate row %s", row.name)
				}
				seen[row.name] = true
				n++
				t.Run(row.name, func(t *testing.T) {
					before := map[string]int{}
					for _, tbl := range tables {
						before[tbl] = env.Count(t, tbl)
					}
					req := request{method: g.method, path: g.path, bearer: g.bearer, contentType: row.contentType, body: row.body}
					if row.method != "" {
						req.method = row.method
					}
					if row.path != "" {
						req.path = row.path
					}
					res := send(t, env, req)
					if res.status != row.status {
						t.Errorf("HTTP %d, want %d: %s", res.status, row.status, truncate(res.body))
					}
					envl, data := decodeEnvelope(t, res)
					if envl.Status != "error" || data.Code != row.code {
						t.Errorf("status %q code %q, want error %s: %s", envl.Status, data.Code, row.code, truncate(res.body))
					}
					if data.Field != row.field {
						t.Errorf("data.field %q, want %q: %s", data.Field, row.field, truncate(res.body))
					}
					if row.field != "" && !strings.HasPrefix(envl.Message, row.field+": ") {
						t.Errorf("message %q does not start with the field %q", envl.Message, row.field)
					}
					if !strings.Contains(envl.Message, row.msg) {
						t.Errorf("message %q does not contain %q", envl.Message, row.msg)
					}
					for _, tbl := range tables {
						if after := env.Count(t, tbl); after != before[tbl] {
							t.Errorf("%s: %d rows before, %d after: a refused request wrote", tbl, before[tbl], after)
						}
					}
				})
			}
		})
	}
	t.Logf("%d bad-input rows", n)

	// More checks on the same process.
	t.Run("accepted_variants", func(t *testing.T) { acceptedVariants(t, env, key) })
	t.Run("conflict_writes_nothing", func(t *testing.T) { conflictWritesNothing(t, env, key) })
	t.Run("unrepresentable_text", func(t *testing.T) { unrepresentableText(t, env, key) })
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// acceptedVariants checks the near misses of the bad-input table that must be accepted: the
// decoder is strict, not fussy.
func acceptedVariants(t *testing.T, env *apptest.Env, key string) {
	t.Helper()
	someID := "7a8b9c0d-1111-4222-8333-444455556666"
	rows := []struct {
		name        string
		path        string
		contentType string
		body        string
		status      int
	}{
		{"charset_parameter", "/session/deposit", "application/json; charset=utf-8", sessionBody(nil), 200},
		{"uppercase_media_type", "/session/deposit", "Application/JSON", sessionBody(nil), 200},
		{"surrounding_whitespace", "/session/deposit", "", " \n" + sessionBody(nil) + "\n ", 200},
		{"null_optional_fields", "/session/deposit", "", strings.Replace(sessionBody(nil), "{", `{"email":null,"operatorReference":null,`, 1), 200},
		{"negative_balance", "/session/withdraw", "", sessionBody(map[string]any{"userBalance": "-10.5"}), 200},
		{"max_decimals", "/session/withdraw", "", sessionBody(map[string]any{"amount": "0.000000000000000001"}), 200},
		{"externalUserId_128_chars", "/session/deposit", "", sessionBody(map[string]any{"externalUserId": strings.Repeat("u", 128)}), 200},
		{"unicode_externalUserId", "/depositor/create", "", `{"externalUserId":"usér-☕"}`, 200},
		{"lang_region", "/session/deposit", "", sessionBody(map[string]any{"lang": "pt-BR"}), 200},
		{"lowercase_currency", "/session/deposit", "", sessionBody(map[string]any{"platformFiatCurrency": "eur"}), 200},
		// Decoded and validated: the (unknown) withdrawal is then not found.
		{"enum_full_name", "/withdraw/" + someID + "/decision", "", `{"decision":"DECISION_REJECT"}`, 404},
		{"test_webhook_empty_body_no_content_type", "", noContentType, "", 0},
	}
	sid, _, _ := openSession(t, env, key, "deposit", nil)
	rows[len(rows)-1].path, rows[len(rows)-1].status = "/session/"+sid+"/test-webhook", 200
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			res := send(t, env, request{method: "POST", path: r.path, bearer: key, contentType: r.contentType, body: r.body})
			if res.status != r.status {
				t.Errorf("HTTP %d, want %d: %s", res.status, r.status, truncate(res.body))
			}
		})
	}
}

// conflictWritesNothing: a CONFLICT on a reused operatorReference must not register the (new)
// user as a depositor either.
func conflictWritesNothing(t *testing.T, env *apptest.Env, key string) {
	t.Helper()
	openSession(t, env, key, "withdraw", map[string]any{"operatorReference": "ref-1"})
	before := env.Count(t, "depositors")
	res := send(t, env, request{method: "POST", path: "/session/deposit", bearer: key,
		body: sessionBody(map[string]any{"externalUserId": "never-registered", "operatorReference": "ref-1"})})
	if res.status != http.StatusConflict {
		t.Fatalf("HTTP %d: %s", res.status, res.body)
	}
	if after := env.Count(t, "depositors"); after != before {
		t.Errorf("depositors %d -> %d: the refused request registered a depositor", before, after)
	}
}

// unrepresentableText: text PostgreSQL cannot store (NUL, invalid UTF-8) in fields
// without a control-character rule must be INVALID_ARGUMENT, not INTERNAL.
func unrepresentableText(t *testing.T, env *apptest.Env, key string) {
	t.Helper()
	for _, r := range []request{
		{method: "GET", path: "/depositor/%00/check", bearer: key},
		{method: "GET", path: "/depositor/%FF/check", bearer: key},
		{method: "POST", path: "/admin/login", body: `{"email":"a\u0000@coffer.test","password":"x"}`},
	} {
		res := send(t, env, r)
		if res.status != http.StatusBadRequest {
			t.Errorf("%s %s: HTTP %d, want 400: %s", r.method, r.path, res.status, res.body)
		}
	}
}
