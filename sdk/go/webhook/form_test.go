package webhook_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/sdk/go/webhook"
)

var at = timestamppb.New(time.Date(2026, 11, 22, 5, 38, 20, 719_999_999, time.UTC))

func deposit() *cofferv1.DepositEvent {
	return &cofferv1.DepositEvent{
		DepositId:             42,
		IdempotencyKey:        "1:0x5c50:0",
		ExternalUserId:        "user 1",
		SessionRef:            new("sr_0123"),
		SessionAmount:         new("25.00"),
		Amount:                "24750000",
		AmountInDollar:        new("24.75"),
		AmountInLocalCurrency: new("22.87"),
		LocalCurrencyCode:     "EUR",
		CurrentRate:           "0.924",
		Pair:                  "USD/EUR",
		GrossAmount:           "25000000",
		FeeAmount:             "250000",
		FeeInDollar:           new("0.250000"),
		Type:                  "ERC20",
		ContractAddress:       new("0xdAC17F958D2ee523a2206206994597C13D831ec7"),
		TransactionHash:       new("0x5c50"),
		ChainId:               1,
		ConfirmedAt:           at,
		OperatorReference:     new("order-42"),
	}
}

const depositBody = "event=DEPOSIT&depositId=42&idempotencyKey=1%3A0x5c50%3A0&externalUserId=user+1" +
	"&sessionRef=sr_0123&sessionAmount=25.00&amount=24750000&amountInDollar=24.75&amountInLocalCurrency=22.87" +
	"&localCurrencyCode=EUR&currentRate=0.924&pair=USD%2FEUR&grossAmount=25000000&feeAmount=250000" +
	"&feeInDollar=0.250000&type=ERC20&contractAddress=0xdAC17F958D2ee523a2206206994597C13D831ec7" +
	"&transactionHash=0x5c50&chainId=1&confirmedAt=2026-11-22T05%3A38%3A20.719Z&operatorReference=order-42"

func TestEncode(t *testing.T) {
	direct := deposit()
	direct.SessionRef, direct.SessionAmount, direct.ContractAddress, direct.OperatorReference = nil, nil, nil, nil
	direct.Type = "NATIVE"
	test := deposit()
	test.DepositId = -4503599627370495
	test.Test = true
	emptyOptional := deposit()
	emptyOptional.AmountInDollar = new("")

	tests := []struct {
		name string
		msg  proto.Message
		want string
	}{
		{"deposit with session", deposit(), depositBody},
		{"deposit without session: null session fields", direct,
			"event=DEPOSIT&depositId=42&idempotencyKey=1%3A0x5c50%3A0&externalUserId=user+1" +
				"&sessionRef=null&sessionAmount=null&amount=24750000&amountInDollar=24.75&amountInLocalCurrency=22.87" +
				"&localCurrencyCode=EUR&currentRate=0.924&pair=USD%2FEUR&grossAmount=25000000&feeAmount=250000" +
				"&feeInDollar=0.250000&type=NATIVE&contractAddress=null" +
				"&transactionHash=0x5c50&chainId=1&confirmedAt=2026-11-22T05%3A38%3A20.719Z&operatorReference=null"},
		{"test deposit: negative id, test=true last", test,
			strings.Replace(depositBody, "depositId=42", "depositId=-4503599627370495", 1) + "&test=true"},
		{"optional set to empty is written empty", emptyOptional,
			strings.Replace(depositBody, "amountInDollar=24.75", "amountInDollar=", 1)},
		{"withdraw request", &cofferv1.WithdrawRequestEvent{
			WithdrawRequestId:  "7f0c5a54-3f3e-4f0e-9a59-2d1f4c7b9e11",
			SessionRef:         "sr_9",
			ExternalUserId:     "u&2=3",
			Type:               "DIRECT_TRANSFER",
			Address:            "0x8ba1f109551bD432803012645Ac136ddd64DBA72",
			CryptoCurrencyCode: "USDT",
			FiatCurrencyCode:   "USD",
			FiatAmount:         "40.00",
			CryptoAmountSent:   new("40.000000"),
			AmountInUsd:        new("40.00"),
			RequestedAt:        timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))),
		}, "event=WITHDRAW_REQUEST&withdrawRequestId=7f0c5a54-3f3e-4f0e-9a59-2d1f4c7b9e11&sessionRef=sr_9" +
			"&externalUserId=u%262%3D3&type=DIRECT_TRANSFER&address=0x8ba1f109551bD432803012645Ac136ddd64DBA72" +
			"&cryptoCurrencyCode=USDT&fiatCurrencyCode=USD&fiatAmount=40.00&cryptoAmount=null" +
			"&cryptoAmountSent=40.000000&amountInUsd=40.00&requestedAt=2026-01-02T02%3A04%3A05.000Z&operatorReference=null"},
		{"withdraw complete, unset timestamp is null", &cofferv1.WithdrawCompleteEvent{
			Event:             "WITHDRAW_COMPLETE",
			WithdrawRequestId: "7f0c5a54-3f3e-4f0e-9a59-2d1f4c7b9e11",
			SessionRef:        "sr_9",
			ExternalUserId:    "u2",
			Type:              "OFF_RAMP",
			Status:            "COMPLETED",
		}, "event=WITHDRAW_COMPLETE&withdrawRequestId=7f0c5a54-3f3e-4f0e-9a59-2d1f4c7b9e11&sessionRef=sr_9" +
			"&externalUserId=u2&type=OFF_RAMP&status=COMPLETED&address=&cryptoCurrencyCode=&fiatCurrencyCode=" +
			"&fiatAmount=&cryptoAmount=null&cryptoAmountSent=null&amountInUsd=null&completedAt=null&operatorReference=null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := webhook.Encode(tt.msg)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("Encode:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestEncodeRefuses(t *testing.T) {
	for name, msg := range map[string]proto.Message{
		"not an event":   &cofferv1.WebhookDelivery{},
		"nil":            nil,
		"wrong event":    &cofferv1.DepositEvent{Event: "WITHDRAW_COMPLETE"},
		"bad timestamp":  &cofferv1.DepositEvent{ConfirmedAt: &timestamppb.Timestamp{Nanos: -1}},
		"typed nil":      (*cofferv1.DepositEvent)(nil),
		"timestamp type": &timestamppb.Timestamp{},
	} {
		if _, err := webhook.Encode(msg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParse(t *testing.T) {
	ms := timestamppb.New(at.AsTime().Truncate(time.Millisecond))
	want := deposit()
	want.Event = "DEPOSIT"
	want.ConfirmedAt = ms

	direct := proto.Clone(want).(*cofferv1.DepositEvent)
	direct.SessionRef, direct.SessionAmount = nil, nil
	direct.AmountInDollar = nil // "" is absent too

	test := proto.Clone(want).(*cofferv1.DepositEvent)
	test.Test = true

	tests := []struct {
		name string
		body string
		want proto.Message
	}{
		{"deposit", depositBody, want},
		{"null and empty are absent", strings.NewReplacer("sessionRef=sr_0123", "sessionRef=null",
			"sessionAmount=25.00", "sessionAmount=", "amountInDollar=24.75", "amountInDollar=null").Replace(depositBody), direct},
		{"keys in any order, unknown keys ignored", "newField=1&" + strings.Join(reverse(strings.Split(depositBody, "&")), "&"), want},
		{"test event", depositBody + "&test=true", test},
		{"test=false is not a test", depositBody + "&test=false", want},
		{"missing keys stay zero", "event=WITHDRAW_COMPLETE&withdrawRequestId=w1&completedAt=2026-01-02T03%3A04%3A05.123456Z",
			&cofferv1.WithdrawCompleteEvent{Event: "WITHDRAW_COMPLETE", WithdrawRequestId: "w1",
				CompletedAt: timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC))}},
		{"offset timestamps", "event=WITHDRAW_REQUEST&requestedAt=2026-01-02T04%3A04%3A05%2B01%3A00&cryptoAmount=null",
			&cofferv1.WithdrawRequestEvent{Event: "WITHDRAW_REQUEST",
				RequestedAt: timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := webhook.Parse([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, tt.want) {
				t.Fatalf("Parse:\n got %v\nwant %v", got, tt.want)
			}
			if webhook.IsTest(got) != webhook.IsTest(tt.want) {
				t.Fatalf("IsTest = %v", webhook.IsTest(got))
			}
		})
	}
}

func reverse(s []string) []string {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
	return s
}

func TestParseRefuses(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"unknown event", "event=REFUND&amount=1", `unknown event "REFUND"`},
		{"no event", "amount=1", "no event field"},
		{"null event", "event=null", "no event field"},
		{"duplicate key", "event=DEPOSIT&amount=1&amount=2", `"amount" appears 2 times`},
		{"bad integer", "event=DEPOSIT&depositId=4x", "depositId"},
		{"integer overflow", "event=DEPOSIT&chainId=99999999999999999999", "chainId"},
		{"bad timestamp", "event=DEPOSIT&confirmedAt=yesterday", "confirmedAt"},
		{"bad test flag", "event=DEPOSIT&test=yes", "test"},
		{"bad escape", "event=DEPOSIT&amount=%zz", "malformed"},
	}
	for _, tt := range tests {
		_, err := webhook.Parse([]byte(tt.body))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to mention %s", tt.name, err, tt.want)
		}
	}
	if _, err := webhook.Parse([]byte("event=REFUND")); !errors.Is(err, webhook.ErrUnknownEvent) {
		t.Errorf("unknown event: %v is not ErrUnknownEvent", err)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, msg := range []proto.Message{deposit(), &cofferv1.WithdrawRequestEvent{WithdrawRequestId: "w", Test: true},
		&cofferv1.WithdrawCompleteEvent{Status: "COMPLETED", CryptoAmountSent: new("1.5")}} {
		body, err := webhook.Encode(msg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := webhook.Parse(body)
		if err != nil {
			t.Fatal(err)
		}
		again, err := webhook.Encode(got)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(body) {
			t.Errorf("round trip changed the body:\n%s\n%s", body, again)
		}
		if webhook.EventName(got) != webhook.EventName(msg) {
			t.Errorf("event %s, want %s", webhook.EventName(got), webhook.EventName(msg))
		}
	}
}
