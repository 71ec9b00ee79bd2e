package jobs

import (
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/llmgw/llmgw/consul"
)

// engineTask reads the task a vLLM command line makes its engine serve,
// from --runner and --convert (vllm/config/model.py): a convert type names
// the pooling task, --runner pooling alone makes a pooling engine whose
// task the architecture picks (pooling is true, task ""), and neither
// makes a generate engine. flags is how the args said it, for messages.
func engineTask(args []string) (task string, pooling bool, flags string) {
	var runner, convert string
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(strings.ReplaceAll(args[i], "_", "-"), "=")
		if name != "--runner" && name != "--convert" {
			continue
		}
		if !hasValue && i+1 < len(args) {
			i++
			value = args[i]
		}
		if name == "--runner" {
			runner = value
		} else {
			convert = value
		}
	}
	switch {
	case convert == consul.TaskEmbed || convert == consul.TaskClassify:
		return convert, true, "--convert " + convert
	case runner == "pooling":
		return "", true, "--runner pooling"
	}
	return consul.TaskGenerate, false, "no --runner pooling or --convert"
}

// taskMeta checks meta llmgw-task against the engine's args: routers send
// generate requests only to generate replicas and pooling requests only to
// replicas of their task, so a replica advertising another task than its
// engine serves gets requests it answers 404.
func (c *checker) taskMeta(meta map[string]metaValue, metaRange hcl.Range, task vllmTask, where string) {
	engine, pooling, flags := engineTask(task.cfg.Args)
	v, ok := meta[consul.MetaTask]
	if ok && !v.known {
		return
	}
	advertised, rng := consul.TaskGenerate, metaRange
	if ok {
		advertised, rng = v.value, v.rng
	}
	switch advertised {
	case consul.TaskGenerate, consul.TaskEmbed, consul.TaskClassify:
	default:
		c.add(rng, "%s: meta %s is %q; want %s, %s or %s", where, consul.MetaTask, advertised, consul.TaskGenerate, consul.TaskEmbed, consul.TaskClassify)
		return
	}
	switch {
	case advertised == consul.TaskGenerate && pooling:
		c.add(rng, "%s: meta %s is %q (absent means generate) but the engine args %s make a pooling engine; set %s to its pooling task", where, consul.MetaTask, advertised, flags, consul.MetaTask)
	case advertised != consul.TaskGenerate && !pooling:
		c.add(rng, "%s: meta %s is %q but the engine args (%s) make a generate engine; add --runner pooling to args", where, consul.MetaTask, advertised, flags)
	case engine != "" && advertised != consul.TaskGenerate && advertised != engine:
		c.add(rng, "%s: meta %s is %q but the engine args %s serve %q", where, consul.MetaTask, advertised, flags, engine)
	}
}

// dataParallelMeta checks llmgw-data-parallel-size, when the service
// declares it, against the task's data_parallel_size (absent: 1): a
// router pins cold prompts to ranks below the declared size, and vLLM
// refuses a rank out of its range with a 400.
func (c *checker) dataParallelMeta(meta map[string]metaValue, task vllmTask, where string) {
	v, ok := meta[consul.MetaDataParallelSize]
	if !ok || !v.known {
		return
	}
	want := max(task.cfg.DataParallelSize, 1)
	if n, err := strconv.Atoi(v.value); err != nil || n != want {
		c.add(v.rng, "%s: meta %s is %q; want %d, the task's data_parallel_size", where, consul.MetaDataParallelSize, v.value, want)
	}
}

// modelMeta checks the meta routers list in /v1/models against the task
// config: llmgw-root must be the model the engine loads, and
// llmgw-max-model-len a positive integer, the config's max_model_len
// where the config sets one (else the engine derives it from the model,
// which the operator may know and state).
func (c *checker) modelMeta(meta map[string]metaValue, task vllmTask, where string) {
	if v, ok := meta[consul.MetaRoot]; ok && v.known && v.value != task.cfg.Model {
		c.add(v.rng, "%s: meta %s is %q; want %q, the model the engine loads", where, consul.MetaRoot, v.value, task.cfg.Model)
	}
	v, ok := meta[consul.MetaMaxModelLen]
	if !ok || !v.known {
		return
	}
	n, err := strconv.Atoi(v.value)
	switch {
	case err != nil || n <= 0:
		c.add(v.rng, "%s: meta %s is %q; want a positive integer", where, consul.MetaMaxModelLen, v.value)
	case task.cfg.MaxModelLen > 0 && n != task.cfg.MaxModelLen:
		c.add(v.rng, "%s: meta %s is %q; want %d, the task's max_model_len", where, consul.MetaMaxModelLen, v.value, task.cfg.MaxModelLen)
	}
}
