package driver

import (
	"strconv"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/kvevents/intake"
)

// KVIntake opens the KV-event listeners of replicas and forgets replicas.
// StoreIntake implements it with driver/kvevents/intake; the driver needs
// nothing else from that package.
type KVIntake interface {
	// Open opens the listeners of replica's leader shard, one SUB socket
	// per data-parallel rank, where o says.
	Open(replica string, o KVOpen) (KVListener, error)
	// Forget tells every router that replica holds nothing.
	Forget(replica string)
	// Summary describes what the driver holds for replica, for operators
	// (InspectTask) and for comparing with an engine's ground truth.
	Summary(replica string) KVSummary
}

// KVOpen says where a replica's listeners meet its engine.
type KVOpen struct {
	DataParallel int
	// Dir, when set, is a directory only the engine's user may enter:
	// the engine binds its ipc:// event and replay sockets there and the
	// listeners connect, so no other local process reaches them. Port and
	// ReplayPort are then unused.
	Dir string
	// Port is rank 0's loopback port to bind, consecutive ports for the
	// other ranks (0: pick free ones); ReplayPort the engine's replay
	// ports likewise (0: pick; -1: no replay).
	Port, ReplayPort int
}

// KVSummary is a replica's block state in brief.
type KVSummary struct {
	Blocks int    // blocks held, over ranks and tiers
	KeySum uint64 // wrapping sum of their canonical block keys
}

// KVCounters are a replica's intake counters, summed over ranks.
type KVCounters struct {
	Batches, Replayed, Lost uint64
	// Restarts counts engine restarts the listener saw by itself (the
	// sequence went backwards), not those EngineRestarted announced.
	Restarts uint64
	// Disconnects counts engine connections that ended: an engine exiting,
	// or one cut off for a message over the intake's size cap.
	Disconnects uint64
	// BlockSize is the block size the engine's events carry (0: none
	// yet), which routers key the replica at.
	BlockSize int
	// OffloadPlaceholders counts offloaded-tier stores that describe no
	// block (intake.DecodeStats.OffloadPlaceholders): the replica's CPU
	// tier is missing from the index.
	OffloadPlaceholders uint64
}

// KVListener is one replica's open intake.
type KVListener interface {
	Port() int       // rank 0's event port, persisted to bind again after a restart (0 with Dir)
	ReplayPort() int // rank 0's replay port, -1 for none (0 with Dir)
	Dir() string     // the ipc:// sockets' directory, persisted to connect again after a restart ("" over TCP)
	// EngineRestarted says a new engine process publishes from now on
	// (called before it starts): the replica holds nothing, and routers are
	// told so at once. It does not count in Counters().Restarts.
	EngineRestarted()
	// Resumed says the engine was running before the listener opened (a
	// plugin restart): once its replay shows it holds nothing, routers are
	// told so.
	Resumed()
	Counters() KVCounters
	Close() error
}

// kvWhere says where a shard's listener meets its engine, for events.
func kvWhere(st TaskState) string {
	if st.KVDir != "" {
		return "ipc sockets in " + st.KVDir
	}
	return "port " + strconv.Itoa(st.KVPort)
}

// kvOnWhere completes "KV events on: ".
func kvOnWhere(st TaskState) string {
	if st.KVDir != "" {
		return "engine binds ipc sockets in " + st.KVDir
	}
	return "listening on port " + strconv.Itoa(st.KVPort)
}

// kvEventAttrs are the details of a "KV events on" or "resumed" event.
func kvEventAttrs(st TaskState) map[string]string {
	if st.KVDir != "" {
		return map[string]string{"kv_events": "on", "kv_socket_dir": st.KVDir}
	}
	return map[string]string{"kv_events": "on", "kv_port": strconv.Itoa(st.KVPort)}
}

// StoreIntake is the KVIntake on a kvevents.Store, from which the router
// sessions drain.
type StoreIntake struct {
	Store  *kvevents.Store
	Logger hclog.Logger
}

// Open opens the replica's listeners into the store.
func (s StoreIntake) Open(replica string, o KVOpen) (KVListener, error) {
	in, err := intake.Open(intake.Config{
		Replica: replica, DataParallelSize: o.DataParallel, Dir: o.Dir, Port: o.Port, ReplayPort: o.ReplayPort, Logger: s.Logger,
	}, s.Store)
	if err != nil {
		return nil, err
	}
	return storeListener{in, s.Store, replica}, nil
}

// Forget removes the replica's blocks; sessions send routers the removal.
func (s StoreIntake) Forget(replica string) { s.Store.Remove(replica) }

// Summary counts and sums the replica's block keys in the store.
func (s StoreIntake) Summary(replica string) KVSummary {
	var sum KVSummary
	for _, b := range s.Store.Blocks(replica) {
		sum.Blocks++
		sum.KeySum += uint64(b.Key)
	}
	return sum
}

type storeListener struct {
	*intake.Intake
	store   *kvevents.Store
	replica string
}

func (l storeListener) Counters() KVCounters {
	c := KVCounters{BlockSize: l.store.BlockSize(l.replica)}
	for _, st := range l.Stats() {
		c.Batches += st.Batches
		c.Replayed += st.Replayed
		c.Lost += st.Lost
		c.Restarts += st.Restarts
		c.Disconnects += st.Disconnects
		c.OffloadPlaceholders += st.Decode.OffloadPlaceholders
	}
	return c
}

var (
	_ KVIntake   = StoreIntake{}
	_ KVListener = storeListener{}
)
