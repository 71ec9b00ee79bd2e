package driver

import (
	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/driver/kvevents"
)

// KVIntake opens the KV-event listeners of replicas and forgets replicas.
// kvevents implements it; the driver needs nothing else from that package.
type KVIntake interface {
	// Open binds a listener for replica's leader shard: one SUB socket per
	// data-parallel rank on consecutive ports starting at port (0: pick
	// free ones), and reserves the engine's replay ports likewise
	// (replayPort 0: pick; -1: no replay).
	Open(replica string, dataParallel, port, replayPort int) (KVListener, error)
	// Forget tells every router that replica holds nothing.
	Forget(replica string)
}

// KVListener is one replica's open intake.
type KVListener interface {
	Port() int       // rank 0's event port, persisted to bind again after a restart
	ReplayPort() int // rank 0's replay port, -1 for none
	// EngineRestarted says a new engine process publishes now.
	EngineRestarted()
	Close() error
}

// StoreIntake is the KVIntake on a kvevents.Store, from which the router
// sessions drain.
type StoreIntake struct {
	Store  *kvevents.Store
	Logger hclog.Logger
}

// Open binds the replica's listeners into the store.
func (s StoreIntake) Open(replica string, dataParallel, port, replayPort int) (KVListener, error) {
	return kvevents.OpenIntake(kvevents.IntakeConfig{
		Replica: replica, DataParallelSize: dataParallel, Port: port, ReplayPort: replayPort, Logger: s.Logger,
	}, s.Store)
}

// Forget removes the replica's blocks; sessions send routers the removal.
func (s StoreIntake) Forget(replica string) { s.Store.Remove(replica) }

var (
	_ KVIntake   = StoreIntake{}
	_ KVListener = (*kvevents.Intake)(nil)
)
