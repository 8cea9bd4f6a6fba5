package openflow

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ErrMessageLength is the error (wrapped) of a stream whose next header
// says a length below HeaderLen or above the reader's limit: the stream
// cannot be framed any further.
var ErrMessageLength = errors.New("openflow: bad message length")

// Reader splits a stream (a controller connection) into messages. It
// reads into one buffer, as much as the stream gives at a time, so that
// a warm Reader allocates nothing and makes one read for many small
// messages.
type Reader struct {
	r          io.Reader
	maxLen     int
	buf        []byte
	start, end int // buf[start:end] is read and not yet returned
}

// NewReader reads messages of at most maxLen bytes from r.
func NewReader(r io.Reader, maxLen int) *Reader {
	return &Reader{r: r, maxLen: maxLen, buf: make([]byte, max(HeaderLen, min(maxLen, 4096)))}
}

// Next returns the next whole message, header included, valid until the
// next call. A header length below HeaderLen or above the limit gives an
// error wrapping ErrMessageLength that says which. The stream ending
// between messages gives io.EOF, within one io.ErrUnexpectedEOF.
func (r *Reader) Next() ([]byte, error) {
	if err := r.fill(HeaderLen); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint16(r.buf[r.start+2:]))
	switch {
	case n < HeaderLen:
		return nil, fmt.Errorf("%w: %d, below the header's %d", ErrMessageLength, n, HeaderLen)
	case n > r.maxLen:
		return nil, fmt.Errorf("%w: %d, above the limit of %d", ErrMessageLength, n, r.maxLen)
	}
	if err := r.fill(n); err != nil {
		return nil, err
	}
	msg := r.buf[r.start : r.start+n : r.start+n]
	r.start += n
	return msg, nil
}

// fill reads until the buffer holds n bytes from start. It returns
// io.EOF only when the stream ended with nothing buffered.
func (r *Reader) fill(n int) error {
	if r.end-r.start >= n {
		return nil
	}
	if r.start+n > len(r.buf) {
		if n > len(r.buf) {
			buf := make([]byte, max(n, min(2*len(r.buf), r.maxLen)))
			r.end = copy(buf, r.buf[r.start:r.end])
			r.buf = buf
		} else {
			r.end = copy(r.buf, r.buf[r.start:r.end])
		}
		r.start = 0
	}
	for r.end-r.start < n {
		k, err := r.r.Read(r.buf[r.end:])
		r.end += k
		if r.end-r.start >= n {
			return nil
		}
		if err != nil {
			if err == io.EOF && r.end > r.start {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// Buffered is how many bytes of the stream the reader holds beyond the
// messages it returned.
func (r *Reader) Buffered() int { return r.end - r.start }
