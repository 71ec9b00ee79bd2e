package bench

import (
	"fmt"
	"io"

	"github.com/schollz/progressbar/v3"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/client"
)

// ShowProgress draws one progress bar per policy on w, counting finished
// requests, for the CLI's long runs. It keeps the hooks already set and
// calls them first.
func (o *Options) ShowProgress(w io.Writer) {
	var bar *progressbar.ProgressBar
	onStart, onResult := o.OnStart, o.OnResult
	total := len(o.Workload.Requests)
	o.OnStart = func(p Policy) {
		if onStart != nil {
			onStart(p)
		}
		bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(fmt.Sprintf("%-15s", p.Name)),
			progressbar.OptionShowCount(), progressbar.OptionClearOnFinish())
	}
	o.OnResult = func(p Policy, r client.Result) {
		if onResult != nil {
			onResult(p, r)
		}
		_ = bar.Add(1) // progressbar locks; results arrive from many goroutines
	}
}
