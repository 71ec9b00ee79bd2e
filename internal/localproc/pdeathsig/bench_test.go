package pdeathsig_test

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/llmgw/llmgw/internal/localproc/pdeathsig"
)

// BenchmarkStartWait starts and reaps a trivial child through Start: the
// locked thread, the pidfd and the wait for its release included.
func BenchmarkStartWait(b *testing.B) {
	for b.Loop() {
		cmd := exec.Command("true")
		th, err := pdeathsig.Start(cmd, syscall.SIGKILL, cmd.Start)
		if err != nil {
			b.Fatal(err)
		}
		_ = cmd.Wait()
		<-th.Done()
	}
}

// BenchmarkPlainStartWait is the same without Start, for comparison.
func BenchmarkPlainStartWait(b *testing.B) {
	for b.Loop() {
		cmd := exec.Command("true")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		_ = cmd.Wait()
	}
}
