package trace

import (
	"os"
	"strings"
	"testing"
)

func TestParseSample(t *testing.T) {
	f, err := os.Open("testdata/sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := Parse(f, DefaultBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Entries) != 48 {
		t.Fatalf("got %d entries; want 48", len(tr.Entries))
	}
	first := tr.Entries[0]
	if first.Timestamp != 70 || first.InputLength != 1633 || first.OutputLength != 153 || len(first.HashIDs) != 4 {
		t.Errorf("first entry %+v; want timestamp 70, 1633 in, 153 out, 4 hash ids", first)
	}
}

func TestParse(t *testing.T) {
	ok := `{"timestamp": 0, "input_length": 20, "output_length": 5, "hash_ids": [7, 8], "session_id": "x"}`
	tests := []struct {
		name, in string
		want     string // error substring; "" means success
	}{
		{"valid with unknown field", ok + "\n\n" + `{"timestamp": 3, "input_length": 16, "output_length": 1, "hash_ids": [7]}`, ""},
		{"empty", "\n  \n", "no entries"},
		{"not json", "{", "line 1: not a trace entry"},
		{"array", "[1]", "line 1: not a trace entry"},
		{"missing timestamp", `{"input_length": 1, "output_length": 1, "hash_ids": [1]}`, "missing timestamp"},
		{"missing input", `{"timestamp": 1, "output_length": 1, "hash_ids": [1]}`, "missing input_length"},
		{"missing output", `{"timestamp": 1, "input_length": 1, "hash_ids": [1]}`, "missing output_length"},
		{"missing ids", `{"timestamp": 1, "input_length": 1, "output_length": 1}`, "missing hash_ids"},
		{"negative timestamp", `{"timestamp": -1, "input_length": 1, "output_length": 1, "hash_ids": [1]}`, "timestamp -1 is negative"},
		{"zero input", `{"timestamp": 0, "input_length": 0, "output_length": 1, "hash_ids": []}`, "input_length 0"},
		{"zero output", `{"timestamp": 0, "input_length": 1, "output_length": 0, "hash_ids": [1]}`, "output_length 0"},
		{"too few ids", `{"timestamp": 0, "input_length": 17, "output_length": 1, "hash_ids": [1]}`, "1 hash_ids for input_length 17; blocks of 16 tokens need 2"},
		{"too many ids", `{"timestamp": 0, "input_length": 16, "output_length": 1, "hash_ids": [1, 2]}`, "need 1"},
		{"negative id", `{"timestamp": 0, "input_length": 16, "output_length": 1, "hash_ids": [-4]}`, "hash_ids[0] = -4 is negative"},
		{"fractional id", `{"timestamp": 0, "input_length": 16, "output_length": 1, "hash_ids": [1.5]}`, "not a trace entry"},
		{"out of order", strings.Replace(ok, `"timestamp": 0`, `"timestamp": 9`, 1) + "\n" + ok, "line 2: timestamp 0 is before the previous line's 9"},
		{"long line", `{"timestamp": 0, "pad": "` + strings.Repeat("x", MaxLineBytes) + `"}`, "line 1: longer than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.in), 16)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v; want success", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v; want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := Parse(strings.NewReader(ok), 0); err == nil || !strings.Contains(err.Error(), "block size") {
		t.Errorf("block size 0: got %v; want an error naming the block size", err)
	}
}

// FuzzParse checks that no input panics and that every accepted trace
// keeps the invariants replay relies on.
func FuzzParse(f *testing.F) {
	b, err := os.ReadFile("testdata/sample.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"timestamp": 0, "input_length": 20, "output_length": 5, "hash_ids": [7, 8]}`))
	f.Add([]byte("{}\n[]\nnull"))
	f.Fuzz(func(t *testing.T, in []byte) {
		tr, err := Parse(strings.NewReader(string(in)), 16)
		if err != nil {
			return
		}
		var prev int64
		for i, e := range tr.Entries {
			if e.Timestamp < prev || e.InputLength < 1 || e.OutputLength < 1 {
				t.Fatalf("entry %d breaks an invariant: %+v", i, e)
			}
			if len(e.HashIDs) != (e.InputLength+15)/16 {
				t.Fatalf("entry %d: %d ids for %d tokens", i, len(e.HashIDs), e.InputLength)
			}
			prev = e.Timestamp
		}
	})
}
