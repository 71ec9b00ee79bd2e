package config

import "fmt"

// Rates bound the router's own fleet-wide chatter, so that its CPU stays
// bounded however many replicas and routers there are.
type Rates struct {
	// ScrapeMaxRate caps the replica /metrics scrapes per second over all
	// replicas (router/enginemetrics): with more replicas than
	// scrape_interval × this, each is scraped every replicas/this seconds.
	// 0: no cap.
	ScrapeMaxRate int
	// PeerMaxRate caps the peer-load messages a router sends per second
	// to all its peers together (router/peers): with more peers than
	// peer_load_interval × this, each gets a change every peers/this
	// seconds (at most the 1 s keep-alive). 0: no cap.
	PeerMaxRate int
}

// defaultRates are router/enginemetrics' DefaultMaxRate and
// router/peers' DefaultMaxRate (this package imports neither).
func defaultRates() Rates { return Rates{ScrapeMaxRate: 250, PeerMaxRate: 100} }

func (r Rates) validate() []error {
	var errs []error
	if r.ScrapeMaxRate < 0 {
		errs = append(errs, fmt.Errorf("scrape_max_rate %d: must not be negative (0 lifts the cap)", r.ScrapeMaxRate))
	}
	if r.PeerMaxRate < 0 {
		errs = append(errs, fmt.Errorf("peer_load_max_rate %d: must not be negative (0 lifts the cap)", r.PeerMaxRate))
	}
	return errs
}

// rateSettings are the environment variables and flags of Rates.
var rateSettings = []setting{
	{"LLMGW_SCRAPE_MAX_RATE", "scrape-max-rate", "replica /metrics scrapes per second over all replicas (0: no cap)", integer("scrape max rate", func(c *Config) *int { return &c.Rates.ScrapeMaxRate })},
	{"LLMGW_PEER_LOAD_MAX_RATE", "peer-load-max-rate", "peer-load messages per second to all peers together (0: no cap)", integer("peer load max rate", func(c *Config) *int { return &c.Rates.PeerMaxRate })},
}

func init() { settings = append(settings, rateSettings...) }

// applyFileRates takes the file's rate settings.
func (c *Config) applyFileRates(fc *fileConfig) {
	if fc.ScrapeMaxRate != nil {
		c.Rates.ScrapeMaxRate = *fc.ScrapeMaxRate
	}
	if fc.PeerMaxRate != nil {
		c.Rates.PeerMaxRate = *fc.PeerMaxRate
	}
}

// CapOf is a Rates figure as router/enginemetrics and router/peers take
// it: their 0 means their default, below 0 no cap.
func CapOf(rate int) int {
	if rate == 0 {
		return -1
	}
	return rate
}
