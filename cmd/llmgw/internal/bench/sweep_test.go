package bench

import (
	"slices"
	"testing"
)

func TestParseRates(t *testing.T) {
	tests := []struct {
		list string
		want []float64
		ok   bool
	}{
		{"1,2,4", []float64{1, 2, 4}, true},
		{" 0.5, 8 ", []float64{0.5, 8}, true},
		{"3", []float64{3}, true},
		{"", nil, false},
		{"1,,2", nil, false},
		{"2,1", nil, false},
		{"1,1", nil, false},
		{"-1", nil, false},
		{"NaN", nil, false},
		{"Inf", nil, false},
		{"1,x", nil, false},
	}
	for _, tt := range tests {
		got, err := ParseRates(tt.list)
		if (err == nil) != tt.ok || !slices.Equal(got, tt.want) {
			t.Errorf("ParseRates(%q) = %v, %v; want %v (ok %v)", tt.list, got, err, tt.want, tt.ok)
		}
	}
}

// FuzzParseRates: any input gives an error or rising positive rates.
func FuzzParseRates(f *testing.F) {
	for _, s := range []string{"1,2,4", "0.5", "2,1", "", "1e400", ",,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		rates, err := ParseRates(list)
		if err != nil {
			return
		}
		if len(rates) == 0 {
			t.Fatalf("%q: no rates and no error", list)
		}
		for i, r := range rates {
			if !(r > 0) || (i > 0 && r <= rates[i-1]) {
				t.Fatalf("%q: rates %v not rising and positive", list, rates)
			}
		}
	})
}
