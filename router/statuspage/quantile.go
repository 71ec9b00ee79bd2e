package statuspage

import (
	"math"
	"time"
)

// Bucket is one cumulative histogram bucket: Count observations at most
// UpperBound seconds.
type Bucket struct {
	UpperBound float64
	Count      uint64
}

// Quantile estimates the q-quantile (0..1) of a cumulative histogram in
// seconds as Prometheus's histogram_quantile does: linear within the bucket
// it falls in, the lower bound of the first bucket taken as 0, and the
// highest finite bound when it falls in the +Inf bucket. 0 when empty.
func Quantile(q float64, buckets []Bucket, count uint64) time.Duration {
	if count == 0 || len(buckets) == 0 {
		return 0
	}
	rank := q * float64(count)
	lower, below := 0.0, uint64(0)
	for _, b := range buckets {
		if float64(b.Count) >= rank {
			if math.IsInf(b.UpperBound, 1) {
				return seconds(lower)
			}
			in := b.Count - below
			if in == 0 {
				return seconds(b.UpperBound)
			}
			return seconds(lower + (b.UpperBound-lower)*(rank-float64(below))/float64(in))
		}
		lower, below = b.UpperBound, b.Count
	}
	return seconds(lower) // past the last finite bucket
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
