package openflow

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReader(t *testing.T) {
	// A message of 60000 bytes among them grows the buffer.
	messages := append(testMessages[:len(testMessages):len(testMessages)], EchoRequest{Data: make([]byte, 60000)}, BarrierRequest{})
	var stream []byte
	for i, m := range messages {
		stream = Append(stream, uint32(i), m)
	}
	for name, r := range map[string]io.Reader{
		"whole":    bytes.NewReader(stream),
		"one byte": iotest.OneByteReader(bytes.NewReader(stream)),
		"half":     iotest.HalfReader(bytes.NewReader(stream)),
	} {
		rd := NewReader(r, 0xffff)
		for i, m := range messages {
			b, err := rd.Next()
			if err != nil {
				t.Fatalf("%s: message %d: %v", name, i, err)
			}
			if want := Append(nil, uint32(i), m); !bytes.Equal(b, want) {
				t.Fatalf("%s: message %d:\n%x\nnot\n%x", name, i, b, want)
			}
		}
		if _, err := rd.Next(); err != io.EOF {
			t.Errorf("%s: at the end %v", name, err)
		}
	}
}

func TestReaderErrors(t *testing.T) {
	echo := Append(nil, 1, EchoRequest{Data: make([]byte, 100)})
	for _, c := range []struct {
		name   string
		stream []byte
		maxLen int
		want   error
		says   string
	}{
		{"cut header", echo[:5], 0xffff, io.ErrUnexpectedEOF, ""},
		{"cut body", echo[:50], 0xffff, io.ErrUnexpectedEOF, ""},
		{"length 7", patch(bytes.Clone(echo), 2, 0, 7), 0xffff, ErrMessageLength, "7, below the header's 8"},
		{"over the limit", echo, 100, ErrMessageLength, "108, above the limit of 100"},
	} {
		_, err := NewReader(bytes.NewReader(c.stream), c.maxLen).Next()
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// TestReaderAllocs: a warm Reader allocates nothing per message.
func TestReaderAllocs(t *testing.T) {
	var stream []byte
	for range 100 {
		stream = Append(stream, 1, EchoRequest{Data: make([]byte, 1000)})
	}
	src := bytes.NewReader(stream)
	rd := NewReader(src, 0xffff)
	allocs := testing.AllocsPerRun(10, func() {
		src.Reset(stream)
		for range 100 {
			if _, err := rd.Next(); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per 100 messages", allocs)
	}
}
