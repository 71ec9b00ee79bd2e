package oracle

import (
	"slices"
	"testing"
)

func seq(from, to uint32) []uint32 {
	var s []uint32
	for v := from; v <= to; v++ {
		s = append(s, v)
	}
	return s
}

func TestReusable(t *testing.T) {
	a := seq(1, 8) // two full blocks of 4
	tests := []struct {
		name    string
		prompts [][]uint32
		want    []int
	}{
		{"first request finds nothing", [][]uint32{a}, []int{0}},
		{"an identical prompt recomputes its last block", [][]uint32{a, a}, []int{0, 4}},
		{"a longer prompt reuses both blocks", [][]uint32{a, seq(1, 9)}, []int{0, 8}},
		{"a diverging prompt reuses the common block", [][]uint32{a, append(seq(1, 4), 9, 9, 9, 9, 9)}, []int{0, 4}},
		{"a partial block is never cached", [][]uint32{seq(1, 3), seq(1, 6)}, []int{0, 0}},
		{"blocks are chained: a second block alone is no hit", [][]uint32{a, seq(5, 12)}, []int{0, 0}},
		{"blocks of any earlier prompt count", [][]uint32{seq(1, 4), seq(1, 12), seq(1, 13)}, []int{0, 4, 12}},
		{"one token", [][]uint32{{7}, {7}}, []int{0, 0}},
		{"empty prompt", [][]uint32{{}, a}, []int{0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Reusable(tc.prompts, 4); !slices.Equal(got, tc.want) {
				t.Errorf("got %v; want %v", got, tc.want)
			}
		})
	}
	if got := Reusable([][]uint32{a, a}, 0); !slices.Equal(got, []int{0, 0}) {
		t.Errorf("block size 0: got %v; want no reuse", got)
	}
}
