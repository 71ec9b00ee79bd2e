package scheduler

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Deps are what plugins may need from the router.
type Deps struct {
	// Index is the precise prefix index (required by "prefix").
	Index PrefixIndex
	// Now is the clock (default time.Now); tests inject a fake one.
	Now func() time.Time
	// Rand seeds the picker (default: a random PCG); tests inject a fixed one.
	Rand rand.Source
}

// Factory builds a plugin instance from its strictly decoded parameters.
type Factory func(name TypedName, params json.RawMessage, deps Deps) (Plugin, error)

// Registry maps plugin types to factories. It is a value, passed in, so
// tests and embedders build exactly the set they want.
type Registry struct {
	factories map[string]Factory
}

// NewRegistry returns an empty registry; RegisterBuiltins fills it.
func NewRegistry() *Registry { return &Registry{factories: map[string]Factory{}} }

// Register adds a plugin type; registering a type twice is an error.
func (r *Registry) Register(typ string, f Factory) error {
	if typ == "" || f == nil {
		return errors.New("register plugin: empty type or nil factory")
	}
	if _, dup := r.factories[typ]; dup {
		return fmt.Errorf("register plugin: type %q already registered", typ)
	}
	r.factories[typ] = f
	return nil
}

// Types lists the registered plugin types, sorted.
func (r *Registry) Types() []string {
	ts := slices.Sorted(maps.Keys(r.factories))
	return ts
}

// Spec configures one plugin instance.
type Spec struct {
	Type string `json:"type"`
	// Name tells two instances of a type apart (default: the type).
	Name string `json:"name,omitempty"`
	// Weight multiplies a scorer's score in the total (scorers only).
	Weight float64         `json:"weight,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Config is the scheduler section of the router's configuration.
type Config struct {
	Filters []Spec `json:"filters"`
	Scorers []Spec `json:"scorers"`
	Picker  Spec   `json:"picker"`
	// Replicator, when set, copies hot prefixes to idle replicas
	// (Replicator); nil runs none.
	Replicator *Spec `json:"replicator,omitempty"`
}

// DefaultConfig is the configuration used when the router's config has no
// scheduler section. The ttft scorer carries the decision, weighing each
// replica's cached prefix against the prefill queued on it; the prefix
// scorers (which ttft reads, so they come first) settle near-ties towards
// the cache, load spreads ties, and a session stays unless a rival is
// clearly faster (README.md has the arithmetic).
func DefaultConfig() Config {
	return Config{
		Filters: []Spec{{Type: "model"}, {Type: "healthy"}},
		Scorers: []Spec{
			{Type: "prefix", Weight: 1},
			{Type: "approx-prefix", Weight: 1},
			{Type: "ttft", Weight: 4},
			{Type: "load", Weight: 1},
			{Type: "session", Weight: 3},
		},
		Picker:     Spec{Type: "max-score"},
		Replicator: &Spec{Type: "hot-prefix"},
	}
}

// New builds one plugin.
func (r *Registry) New(s Spec, deps Deps) (Plugin, error) {
	f, ok := r.factories[s.Type]
	if !ok {
		return nil, fmt.Errorf("unknown plugin type %q (known: %v)", s.Type, r.Types())
	}
	name := TypedName{Type: s.Type, Name: s.Name}
	if name.Name == "" {
		name.Name = s.Type
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	p, err := f(name, s.Params, deps)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", name, err)
	}
	return p, nil
}

// Build assembles a Scheduler from cfg.
func (r *Registry) Build(cfg Config, deps Deps) (*Scheduler, error) {
	names := map[TypedName]bool{}
	build := func(role string, s Spec) (Plugin, error) {
		p, err := r.New(s, deps)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", role, err)
		}
		if names[p.TypedName()] {
			return nil, fmt.Errorf("%s: duplicate plugin %s; give one a name", role, p.TypedName())
		}
		names[p.TypedName()] = true
		return p, nil
	}
	var filters []Filter
	for _, s := range cfg.Filters {
		p, err := build("filter", s)
		if err != nil {
			return nil, err
		}
		f, ok := p.(Filter)
		if !ok {
			return nil, fmt.Errorf("filter: %s is not a filter", p.TypedName())
		}
		filters = append(filters, f)
	}
	var scorers []WeightedScorer
	for _, s := range cfg.Scorers {
		if s.Weight <= 0 || math.IsInf(s.Weight, 0) || math.IsNaN(s.Weight) {
			return nil, fmt.Errorf("scorer %s: weight %g must be a finite number > 0", s.Type, s.Weight)
		}
		p, err := build("scorer", s)
		if err != nil {
			return nil, err
		}
		sc, ok := p.(Scorer)
		if !ok {
			return nil, fmt.Errorf("scorer: %s is not a scorer", p.TypedName())
		}
		scorers = append(scorers, WeightedScorer{Scorer: sc, Weight: s.Weight})
	}
	if cfg.Picker.Type == "" {
		return nil, errors.New("picker: no type given")
	}
	p, err := build("picker", cfg.Picker)
	if err != nil {
		return nil, err
	}
	pk, ok := p.(Picker)
	if !ok {
		return nil, fmt.Errorf("picker: %s is not a picker", p.TypedName())
	}
	s, err := New(filters, scorers, pk)
	if err != nil || cfg.Replicator == nil {
		return s, err
	}
	p, err = build("replicator", *cfg.Replicator)
	if err != nil {
		return nil, err
	}
	rp, ok := p.(Replicator)
	if !ok {
		return nil, fmt.Errorf("replicator: %s is not a replicator", p.TypedName())
	}
	return s.WithReplicator(rp), nil
}
