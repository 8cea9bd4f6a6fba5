package conntrack

import (
	"testing"
	"time"
)

// TestAtIsTheTrackersClock: At of a moment reads what Now reads then,
// within the time between the two readings.
func TestAtIsTheTrackersClock(t *testing.T) {
	before := Now()
	at := At(time.Now())
	after := Now()
	if at < before-int64(time.Millisecond) || at > after+int64(time.Millisecond) {
		t.Fatalf("At(time.Now()) = %d, outside Now's %d to %d", at, before, after)
	}
}
