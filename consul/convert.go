package consul

import (
	"fmt"
	"sort"
	"strconv"
)

// Tags, service names and meta keys shared by jobspecs, drivers and routers.
const (
	// ReplicaTag marks a Consul service instance as an llmgw model replica.
	ReplicaTag = "llmgw"
	// RouterService is the service name every router registers under.
	RouterService = "llmgw-router"

	MetaModel     = "llmgw-model"
	MetaReplica   = "llmgw-replica"
	MetaBlockSize = "llmgw-block-size"
	MetaKVEvents  = "llmgw-kv-events"
	// MetaKVCacheGroups declares a hybrid model's KV-cache groups in
	// group-index order ("full,sliding_window:128", "full,mamba"), so
	// routers apply the engine's hit rule before the replica's first KV
	// event names them. The router parses it (router/kvgroups).
	MetaKVCacheGroups = "llmgw-kv-cache-groups"
	MetaRole          = "llmgw-role"
	// MetaTask is the task the replica's engine serves, as vLLM names it:
	// TaskGenerate (also when absent), or a pooling task, TaskEmbed or
	// TaskClassify (`--runner pooling`, `--convert embed|classify`). A
	// vLLM instance serves the routes of its task only, so the router
	// sends generate requests and pooling requests to different replicas.
	MetaTask = "llmgw-task"
	// MetaRoot and MetaMaxModelLen are what vLLM's /v1/models says of
	// the model: root, the model path the engine loaded (the task
	// config's model; llmgw-model is the served name), and max_model_len.
	// Routers list them in their own /v1/models; absent, the router
	// leaves the field out.
	MetaRoot        = "llmgw-root"
	MetaMaxModelLen = "llmgw-max-model-len"
	MetaIngestPort  = "llmgw-kv-ingest-port"
	// MetaDataParallelSize is the replica's data-parallel size (the
	// driver's data_parallel_size, vLLM's --data-parallel-size): the ranks
	// behind its one API server. Knowing it, the router pins a prompt no
	// rank holds to a rank it chooses, so the prompt's siblings can follow
	// it there; absent, such a prompt goes unpinned and the engine
	// balances it.
	MetaDataParallelSize = "llmgw-data-parallel-size"
	// MetaAdminPort is a router's admin listener port (its /admin API and
	// /metrics), for operator tools; absent on routers without one.
	MetaAdminPort = "llmgw-admin-port"

	// The values of MetaTask (vllm/tasks.py).
	TaskGenerate = "generate"
	TaskEmbed    = "embed"
	TaskClassify = "classify"

	// DefaultBlockSize is vLLM's default KV block size, assumed when a
	// replica does not advertise one.
	DefaultBlockSize = 16
	// maxBlockSize bounds llmgw-block-size to catch typos (vLLM's largest is 256).
	maxBlockSize = 4096
)

// Replica is a model replica whose checks pass, or warn, or that is in
// maintenance mode (then it drains), ready for the router's replica set.
type Replica struct {
	// ID is the llmgw replica id ("<alloc id>/<task>"), which joins Consul
	// instances with the KV state drivers send.
	ID        string
	Model     string
	Address   string
	Port      int
	BlockSize int
	// KVEvents says the replica's driver forwards KV events, so the router
	// may route it in exact mode once updates arrive.
	KVEvents bool
	// KVCacheGroups is the MetaKVCacheGroups value, unparsed ("" when
	// absent).
	KVCacheGroups string
	Role          string
	// Task is the MetaTask value, TaskGenerate when absent.
	Task string
	// Root and MaxModelLen are MetaRoot and MetaMaxModelLen; "" and 0
	// when absent.
	Root        string
	MaxModelLen int
	// DataParallelSize is MetaDataParallelSize; 0 when absent.
	DataParallelSize int
	// Health is HealthPassing, HealthWarning or HealthMaintenance; critical
	// instances are never converted.
	Health string
	// Node and ServiceID locate the Consul registration, for logs.
	Node      string
	ServiceID string
}

// Draining reports whether the replica should finish its in-flight requests
// but take no new ones: its checks warn or it is in maintenance mode. The
// router keeps its KV state, so it comes back with a warm cache.
func (r Replica) Draining() bool { return r.Health != HealthPassing }

// Router is a passing llmgw-router instance, as drivers see it.
type Router struct {
	// ID is node/service-id, unique across the catalog, so a driver keeps one
	// session per router instance.
	ID      string
	Address string
	// Port is the router's HTTP port; IngestPort its KV-ingest port.
	Port       int
	IngestPort int
	// AdminPort is the admin listener's port (MetaAdminPort); 0 when the
	// router advertises none, or a malformed one.
	AdminPort int
	// Health is the instance's health (Health* constants): always passing
	// from ConvertRouters, any from ConvertRegisteredRouters.
	Health string
}

// ConvertReplicas turns instances into replicas sorted by ID. Critical
// instances are left out (they leave routing at once); warning ones and
// those in maintenance are kept as draining. An instance with missing or
// malformed meta, or repeating an earlier replica id, is skipped and
// reported in skipped; the rest are still returned.
func ConvertReplicas(in []Instance) (out []Replica, skipped []error) {
	seen := make(map[string]bool, len(in))
	for _, inst := range in {
		health := healthOf(inst)
		if health == HealthCritical {
			continue
		}
		r, err := toReplica(inst)
		r.Health = health
		if err == nil && seen[r.ID] {
			err = fmt.Errorf("replica id %q already used by another instance", r.ID)
		}
		if err != nil {
			skipped = append(skipped, fmt.Errorf("skip instance %s on node %s: %w", inst.ServiceID, inst.Node, err))
			continue
		}
		seen[r.ID] = true
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, skipped
}

func toReplica(in Instance) (Replica, error) {
	r := Replica{
		ID:        in.Meta[MetaReplica],
		Model:     in.Meta[MetaModel],
		Address:   in.Address,
		Port:      in.Port,
		BlockSize: DefaultBlockSize,
		Role:      in.Meta[MetaRole],
		Node:      in.Node,
		ServiceID: in.ServiceID,
	}
	if r.ID == "" {
		return Replica{}, fmt.Errorf("meta %s is missing", MetaReplica)
	}
	if r.Model == "" {
		return Replica{}, fmt.Errorf("meta %s is missing", MetaModel)
	}
	if err := checkEndpoint(in); err != nil {
		return Replica{}, err
	}
	if s, ok := in.Meta[MetaBlockSize]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 || n > maxBlockSize {
			return Replica{}, fmt.Errorf("meta %s=%q: want an integer in 1..%d", MetaBlockSize, s, maxBlockSize)
		}
		r.BlockSize = n
	}
	switch s := in.Meta[MetaKVEvents]; s {
	case "", "false":
	case "true":
		r.KVEvents = true
	default:
		return Replica{}, fmt.Errorf("meta %s=%q: want true or false", MetaKVEvents, s)
	}
	r.KVCacheGroups = in.Meta[MetaKVCacheGroups]
	switch r.Role {
	case "", "agg", "prefill", "decode":
	default:
		return Replica{}, fmt.Errorf("meta %s=%q: want agg, prefill or decode", MetaRole, r.Role)
	}
	r.Root = in.Meta[MetaRoot]
	if s, ok := in.Meta[MetaMaxModelLen]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return Replica{}, fmt.Errorf("meta %s=%q: want a positive integer", MetaMaxModelLen, s)
		}
		r.MaxModelLen = n
	}
	if s, ok := in.Meta[MetaDataParallelSize]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return Replica{}, fmt.Errorf("meta %s=%q: want a positive integer", MetaDataParallelSize, s)
		}
		r.DataParallelSize = n
	}
	r.Task = in.Meta[MetaTask]
	switch r.Task {
	case "":
		r.Task = TaskGenerate
	case TaskGenerate, TaskEmbed, TaskClassify:
	default:
		return Replica{}, fmt.Errorf("meta %s=%q: want %s, %s or %s", MetaTask, r.Task, TaskGenerate, TaskEmbed, TaskClassify)
	}
	return r, nil
}

// ConvertRouters turns passing instances of the llmgw-router service into
// routers sorted by ID, skipping (and reporting) any without a valid ingest
// port. Routers whose checks are not all passing are left out.
func ConvertRouters(in []Instance) (out []Router, skipped []error) {
	return convertRouters(in, true)
}

// ConvertRegisteredRouters is ConvertRouters keeping routers of every
// health, each with its Health. Drivers push KV state to a router as soon
// as it is registered, before its first check passes (Consul runs a new
// check first at a random point of its interval, up to 10 s in the shipped
// jobspec), so that it routes exact from the moment it takes requests.
func ConvertRegisteredRouters(in []Instance) (out []Router, skipped []error) {
	return convertRouters(in, false)
}

func convertRouters(in []Instance, passingOnly bool) (out []Router, skipped []error) {
	for _, inst := range in {
		if passingOnly && healthOf(inst) != HealthPassing {
			continue
		}
		r, err := toRouter(inst)
		if err != nil {
			skipped = append(skipped, fmt.Errorf("skip instance %s on node %s: %w", inst.ServiceID, inst.Node, err))
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, skipped
}

func toRouter(in Instance) (Router, error) {
	if in.ServiceID == "" {
		return Router{}, fmt.Errorf("service id is empty")
	}
	if err := checkEndpoint(in); err != nil {
		return Router{}, err
	}
	s, ok := in.Meta[MetaIngestPort]
	if !ok {
		return Router{}, fmt.Errorf("meta %s is missing", MetaIngestPort)
	}
	p, err := strconv.Atoi(s)
	if err != nil || p <= 0 || p > 65535 {
		return Router{}, fmt.Errorf("meta %s=%q: want a port in 1..65535", MetaIngestPort, s)
	}
	r := Router{ID: in.Node + "/" + in.ServiceID, Address: in.Address, Port: in.Port, IngestPort: p, Health: healthOf(in)}
	// A malformed admin port reads as none: drivers must not lose a
	// router's KV ingest over a tool's field.
	if a, err := strconv.Atoi(in.Meta[MetaAdminPort]); err == nil && a > 0 && a <= 65535 {
		r.AdminPort = a
	}
	return r, nil
}

// healthOf is in's health, "" counting as passing.
func healthOf(in Instance) string {
	switch in.Health {
	case "", HealthPassing:
		return HealthPassing
	case HealthWarning, HealthMaintenance:
		return in.Health
	}
	return HealthCritical
}

func checkEndpoint(in Instance) error {
	if in.Address == "" {
		return fmt.Errorf("no service or node address")
	}
	if in.Port <= 0 || in.Port > 65535 {
		return fmt.Errorf("port %d out of range", in.Port)
	}
	return nil
}
