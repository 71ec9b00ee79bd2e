package bench

// peerPolicies are other routers' published policies, as llmgw scheduler
// configurations (docs/PEER_POLICIES.md gives each rule, its defaults, the
// version followed and where llmgw's version differs). A scorer of weight
// 0.001 only feeds the cached-block predictions to the scorer after it;
// its own score can at most break an exact tie.
func peerPolicies() []Policy {
	const picker = "picker \"max-score\" {}\n"
	// feed is llmgw's precise prefix scorer without speculative credit,
	// as a source of predictions from the KV events.
	const feed = "scorer \"prefix\" {\n  weight = 0.001\n  params = { speculative_ttl = \"0s\" }\n}\n"
	return []Policy{
		{"dynamo", filters + feed + "scorer \"dynamo-cost\" {\n  weight = 1\n}\n" + picker},
		{"sglang-cache-aware", filters + "scorer \"sglang-cache-aware\" {\n  weight = 1\n}\n" + picker},
		{"llmd-default", filters +
			"scorer \"approx-prefix\" {\n  weight = 3\n  params = { ignore_events = true, ttl = \"24h\" }\n}\n" +
			"scorer \"llmd-queue\" {\n  weight = 2\n}\nscorer \"llmd-kv-utilization\" {\n  weight = 2\n}\n" + picker},
		{"llmd-precise", filters + feed + "scorer \"llmd-precise-prefix\" {\n  weight = 2\n}\n" +
			"scorer \"llmd-kv-utilization\" {\n  weight = 1\n}\nscorer \"llmd-queue\" {\n  weight = 1\n}\n" + picker},
		{"aibrix-prefix", filters + "scorer \"aibrix-prefix-cache\" {\n  weight = 1\n}\n" + picker},
	}
}
