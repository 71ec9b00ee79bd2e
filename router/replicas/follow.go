package replicas

import (
	"context"
	"reflect"

	"github.com/llmgw/llmgw/consul"
)

// Source is a live list of Consul replicas; *consul.Watcher[consul.Replica]
// is one.
type Source interface {
	Changed() <-chan struct{}
	Current() ([]consul.Replica, bool)
}

// NamedSource is a Source with the Consul service it watches.
type NamedSource struct {
	Service string
	Source
}

// FromConsul converts Consul replicas of service into set members.
func FromConsul(service string, in []consul.Replica) []Replica {
	out := make([]Replica, len(in))
	for i, r := range in {
		out[i] = Replica{
			ID: r.ID, Model: r.Model, Address: HostPort(r.Address, r.Port), BlockSize: r.BlockSize, KVEvents: r.KVEvents, KVCacheGroups: r.KVCacheGroups, DataParallelSize: r.DataParallelSize, Source: service,
			Health: r.Health, Draining: r.Draining(), Role: RoleOf(r.Role), Task: r.Task,
			Root: r.Root, MaxModelLen: r.MaxModelLen,
		}
	}
	return out
}

// Follow keeps s equal to static plus every source's current replicas until
// ctx ends: it sets the set once at the start, then again on each wake-up.
// Static replicas win over Consul ones with the same id.
func Follow(ctx context.Context, s *Set, static []Replica, sources []NamedSource) {
	merged := func() []Replica {
		list := append([]Replica(nil), static...)
		for _, src := range sources {
			cur, _ := src.Current()
			list = append(list, FromConsul(src.Service, cur)...)
		}
		return list
	}
	s.Replace(merged())
	cases := make([]reflect.SelectCase, 0, len(sources)+1)
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
	for _, src := range sources {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(src.Changed())})
	}
	for {
		chosen, _, _ := reflect.Select(cases)
		if chosen == 0 {
			return
		}
		s.Replace(merged())
	}
}
