package kvevents

import "strings"

// Gap is a field an engine's event schema lacks that some blocks'
// canonical keys depend on. vLLM encodes events as positional arrays and
// older engines send fewer fields, so a missing field is not an unset one:
// the driver cannot tell which blocks it would key wrong, only that some
// would. A replica whose events show a gap routes approx (Store.Untrusted)
// instead of exact with keys that may be wrong.
type Gap uint8

// Gaps, as the intake detects them on BlockStored.
const (
	// GapExtraKeys: BlockStored has no extra_keys field (an array of fewer
	// than 9 fields). A block stored under a cache_salt (or with
	// multimodal inputs) would be keyed as the plain block of its tokens:
	// the salted tenant's requests would find nothing, and other tenants'
	// would be sent to blocks they cannot use.
	GapExtraKeys Gap = 1 << iota
	// GapLoRAName: a BlockStored with a non-nil lora_id and no lora_name
	// field (an array of fewer than 8 fields). The adapter's blocks would
	// be keyed as the base model's, whose requests would be sent to them.
	GapLoRAName
)

// Reason says, for an operator, what g means for the replica's routing.
func (g Gap) Reason() string {
	var rs []string
	if g&GapExtraKeys != 0 {
		rs = append(rs, "engine's KV events carry no extra_keys (a BlockStored of fewer than 9 fields, vLLM before extra_keys was added to BlockStored): blocks of salted or multimodal prompts cannot be keyed")
	}
	if g&GapLoRAName != 0 {
		rs = append(rs, "engine's KV events carry a lora_id without lora_name (a BlockStored of fewer than 8 fields): LoRA adapter blocks cannot be keyed apart from the base model's")
	}
	return strings.Join(rs, "; ")
}
