package chaos

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"time"
)

// logFailure is an API replica's "request failed" log line: the cause of a 500, which the
// answer hides.
type logFailure struct {
	At    time.Time
	Error string
}

var failedLine = regexp.MustCompile(`^time=(\S+) level=ERROR msg="request failed" error="(.*)"`)

// requestFailures reads a replica's "request failed" lines.
func requestFailures(path string) []logFailure {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []logFailure
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := failedLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			continue
		}
		out = append(out, logFailure{At: at, Error: strings.ReplaceAll(m[2], `\"`, `"`)})
	}
	return out
}

// causeOf finds the logged cause of a 5xx answer: the failure logged by the replica closest
// to the call's end, within the call.
func causeOf(c *Call, failures map[string][]logFailure) string {
	best, bestGap := "", time.Second
	for _, f := range failures[c.Replica] {
		if f.At.Before(c.Start.Add(-100*time.Millisecond)) || f.At.After(c.End.Add(100*time.Millisecond)) {
			continue
		}
		gap := c.End.Sub(f.At)
		if gap < 0 {
			gap = -gap
		}
		if best == "" || gap < bestGap {
			best, bestGap = f.Error, gap
		}
	}
	return best
}
