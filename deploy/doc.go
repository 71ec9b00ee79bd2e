// Package deploy holds what operators install next to the binaries: the
// Grafana dashboard (grafana/llmgw.json) and the Prometheus recording and
// alerting rules (prometheus/llmgw.rules.yml), with the troubleshooting
// table their alerts point at (README.md).
//
// It has no code. Its tests check the files: promtool validates the rules
// and runs their unit tests (prometheus/llmgw.rules.test.yml), and every
// metric the dashboard and the rules name must show in the /metrics of a
// running router fed by vllm-sim replicas, or in vllm-sim's own.
package deploy
