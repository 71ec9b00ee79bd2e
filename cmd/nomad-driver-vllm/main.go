// Command nomad-driver-vllm is the Nomad task driver plugin "vllm". Nomad
// runs it from its plugin_dir; it also re-executes itself in supervise mode
// to keep each shard alive across plugin restarts.
package main

import (
	"os"

	"github.com/llmgw/llmgw/driver"
	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/supervisor"
	"github.com/llmgw/llmgw/plugin"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == supervisor.Mode {
		os.Exit(supervisor.Run(os.Args[2:]))
	}
	logger := plugin.NewLogger("nomad-driver-vllm")
	store := kvevents.NewStore()
	d := driver.New(driver.Options{
		Logger: logger,
		KV:     driver.StoreIntake{Store: store, Logger: logger.Named("kv")},
		Store:  store,
	})
	defer d.Close()
	plugin.Serve(d, logger)
}
