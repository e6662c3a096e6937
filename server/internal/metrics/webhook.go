package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// WebhookDeliveries counts outbox delivery attempts by outcome and attempt number.
var WebhookDeliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "coffer_webhook_deliveries_total",
	Help: "Outbox webhook delivery attempts (not the synchronous test webhooks and mode-A WITHDRAW_REQUESTs) by outcome (delivered; failed: retried later; dead: the last attempt failed, a dead letter) and attempt number (1..5, 6+ after redeliveries).",
}, []string{"outcome", "attempt"})

// WebhookAttempt records one delivery attempt; attempt is 1-based over the event's life.
func WebhookAttempt(outcome string, attempt int) {
	label := "6+"
	if attempt <= 5 {
		label = strconv.Itoa(max(attempt, 1))
	}
	WebhookDeliveries.WithLabelValues(outcome, label).Inc()
}
