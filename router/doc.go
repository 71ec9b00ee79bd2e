// Package router is llmgw-router, the OpenAI-compatible gateway: HTTP API and
// proxy, replica set, block index, scheduler (filters, scorers, picker),
// tokenizer and chat templates, KV ingest from drivers, and metrics.
//
// The router never imports driver/...: it learns block state only through the
// shared wire package, as sent over the network by drivers.
package router
