package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// DefaultBlockSize is the block size of the published Mooncake traces.
const DefaultBlockSize = 512

// Limits on one entry, so a hostile or corrupt file fails with a message
// instead of exhausting memory.
const (
	MaxLineBytes   = 4 << 20
	MaxInputTokens = 1 << 22
	MaxOutputToken = 1 << 20
)

// Entry is one request of a trace.
type Entry struct {
	// Timestamp is the arrival time in milliseconds from the trace's start.
	Timestamp int64
	// InputLength and OutputLength are the prompt and answer lengths in
	// tokens.
	InputLength, OutputLength int
	// HashIDs name the prompt's blocks of BlockSize tokens, the last one
	// possibly partial.
	HashIDs []int64
}

// Trace is a parsed trace, entries in arrival order.
type Trace struct {
	BlockSize int
	Entries   []Entry
}

// line is the wire form; pointers tell a missing field from a zero.
type line struct {
	Timestamp    *int64   `json:"timestamp"`
	InputLength  *int     `json:"input_length"`
	OutputLength *int     `json:"output_length"`
	HashIDs      *[]int64 `json:"hash_ids"`
}

// Parse reads a JSONL trace whose hash ids stand for blocks of blockSize
// tokens. Blank lines are skipped; any other problem is an error naming
// the line.
func Parse(r io.Reader, blockSize int) (Trace, error) {
	if blockSize <= 0 {
		return Trace{}, fmt.Errorf("trace block size must be positive, got %d", blockSize)
	}
	t := Trace{BlockSize: blockSize}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	for n := 1; sc.Scan(); n++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		e, err := parseLine(b, blockSize)
		if err != nil {
			return Trace{}, fmt.Errorf("trace line %d: %w", n, err)
		}
		if k := len(t.Entries); k > 0 && e.Timestamp < t.Entries[k-1].Timestamp {
			return Trace{}, fmt.Errorf("trace line %d: timestamp %d is before the previous line's %d; entries must be in arrival order", n, e.Timestamp, t.Entries[k-1].Timestamp)
		}
		t.Entries = append(t.Entries, e)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Trace{}, fmt.Errorf("trace line %d: longer than %d bytes", len(t.Entries)+1, MaxLineBytes)
		}
		return Trace{}, fmt.Errorf("read trace: %w", err)
	}
	if len(t.Entries) == 0 {
		return Trace{}, errors.New("trace has no entries")
	}
	return t, nil
}

func parseLine(b []byte, blockSize int) (Entry, error) {
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		return Entry{}, fmt.Errorf("not a trace entry: %w", err)
	}
	switch {
	case l.Timestamp == nil:
		return Entry{}, errors.New("missing timestamp")
	case l.InputLength == nil:
		return Entry{}, errors.New("missing input_length")
	case l.OutputLength == nil:
		return Entry{}, errors.New("missing output_length")
	case l.HashIDs == nil:
		return Entry{}, errors.New("missing hash_ids")
	}
	e := Entry{Timestamp: *l.Timestamp, InputLength: *l.InputLength, OutputLength: *l.OutputLength, HashIDs: *l.HashIDs}
	if e.Timestamp < 0 {
		return Entry{}, fmt.Errorf("timestamp %d is negative", e.Timestamp)
	}
	if e.InputLength < 1 || e.InputLength > MaxInputTokens {
		return Entry{}, fmt.Errorf("input_length %d is outside 1..%d", e.InputLength, MaxInputTokens)
	}
	if e.OutputLength < 1 || e.OutputLength > MaxOutputToken {
		return Entry{}, fmt.Errorf("output_length %d is outside 1..%d", e.OutputLength, MaxOutputToken)
	}
	if want := (e.InputLength + blockSize - 1) / blockSize; len(e.HashIDs) != want {
		return Entry{}, fmt.Errorf("%d hash_ids for input_length %d; blocks of %d tokens need %d", len(e.HashIDs), e.InputLength, blockSize, want)
	}
	for i, id := range e.HashIDs {
		if id < 0 {
			return Entry{}, fmt.Errorf("hash_ids[%d] = %d is negative", i, id)
		}
	}
	return e, nil
}
