// Package attack is the router's black-box attack suite: its tests build
// and start a real llmgw-router process in front of a real vllm-sim, attack
// it from outside as a hostile client, driver or scanner would, and state
// for each attack the bound the router holds: how soon it cuts the attack
// off (against the configured timeout, with generous slack) and how much
// its resident memory grows (peak RSS from /proc, reset before each
// attack). `make test` runs it with every other package; -short skips it.
//
// There is no code outside the tests.
package attack
