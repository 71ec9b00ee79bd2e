package kvevents

// chunkSize is the number of changes per log chunk. A full chunk is never
// written again, so a session can read it without the store's lock.
const chunkSize = 4096

// changeLog is an append-only sequence of changes held in fixed-size chunks.
// Positions count from the log's creation; chunks every reader has passed
// are dropped.
type changeLog struct {
	chunks [][]change
	base   uint64 // position of chunks[0][0]
	n      uint64 // position one past the last change
}

func (l *changeLog) end() uint64 { return l.n }

func (l *changeLog) append(c change) {
	last := len(l.chunks) - 1
	if last < 0 || len(l.chunks[last]) == chunkSize {
		l.chunks = append(l.chunks, make([]change, 0, chunkSize))
		last++
	}
	l.chunks[last] = append(l.chunks[last], c)
	l.n++
}

// trim drops the chunks that lie wholly before position low.
func (l *changeLog) trim(low uint64) {
	drop := 0
	for drop < len(l.chunks) && l.base+uint64(len(l.chunks[drop])) <= low && len(l.chunks[drop]) == chunkSize {
		l.base += chunkSize
		drop++
	}
	if drop > 0 {
		clear(l.chunks[:drop])
		l.chunks = l.chunks[drop:]
	}
}

// read returns the changes in [from, l.n) as views into the chunks. The
// caller must hold the store's lock; the views stay valid without it, since
// appends never touch written elements and chunks never reallocate.
func (l *changeLog) read(from uint64) [][]change {
	if from < l.base {
		from = l.base
	}
	var out [][]change
	pos := l.base
	for _, c := range l.chunks {
		next := pos + uint64(len(c))
		if next > from {
			start := 0
			if from > pos {
				start = int(from - pos)
			}
			out = append(out, c[start:len(c):len(c)])
		}
		pos = next
	}
	return out
}
