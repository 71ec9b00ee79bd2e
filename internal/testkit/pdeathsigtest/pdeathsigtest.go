// Package pdeathsigtest is test support for internal/localproc/pdeathsig's promise:
// it ends OS threads of the test process, as a library that locks a thread
// and returns would, so a test can show that a child started through
// pdeathsig.Start survives that. It imports only the standard library.
package pdeathsigtest

import (
	"runtime"
	"sync"
)

// EndThreads ends n OS threads of this process: a goroutine that returns
// while locked to its thread takes the thread with it. Had a child been
// forked with a parent-death signal from one of them, the signal would
// fire (golang/go#27505); in tests, 200 threads hit the forking thread of
// an unprotected child most of the time.
func EndThreads(n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			runtime.LockOSThread()
			runtime.Gosched()
		})
	}
	wg.Wait()
}
