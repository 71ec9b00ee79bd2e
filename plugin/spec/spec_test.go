package spec

import (
	"encoding/hex"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/llmgw/llmgw/plugin/proto/base"
	"github.com/llmgw/llmgw/plugin/proto/hclspec"
)

// TestWireExamples checks our builders and generated code against byte
// strings that Nomad's own generated code produced for the same HCL specs.
func TestWireExamples(t *testing.T) {
	image := Attr("image", "string", true)
	tests := []struct {
		name string
		msg  proto.Message
		want string
	}{
		{"attr", image, "1a110a05696d616765120673747269" + "6e671801"},
		{
			"config schema response",
			&base.ConfigSchemaResponse{Spec: Object(map[string]*hclspec.Spec{"image": image})},
			"0a200a1e0a1c0a05696d61676512131a110a05696d6167651206737472696e671801",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(tt.msg)
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(b); got != tt.want {
				t.Errorf("got %s; want %s", got, tt.want)
			}
		})
	}
}

func TestBuildersSetOneKind(t *testing.T) {
	nested := Object(map[string]*hclspec.Spec{"rank": Attr("", "number", true)})
	tests := []struct {
		name string
		s    *hclspec.Spec
		ok   func(*hclspec.Spec) bool
	}{
		{"block", Block("shard", false, nested), func(s *hclspec.Spec) bool { return s.GetBlockValue().GetNested() == nested }},
		{"block attrs", BlockAttrs("env", "string", false), func(s *hclspec.Spec) bool { return s.GetBlockAttrs().GetType() == "string" }},
		{"block list", BlockList("m", 1, 3, nested), func(s *hclspec.Spec) bool { return s.GetBlockList().GetMaxItems() == 3 }},
		{"block set", BlockSet("m", 0, 0, nested), func(s *hclspec.Spec) bool { return s.GetBlockSet().GetNested() == nested }},
		{"block map", BlockMap("m", []string{"l"}, nested), func(s *hclspec.Spec) bool { return s.GetBlockMap().GetLabels()[0] == "l" }},
		{"optional", Optional("engine", "string", `"vllm"`), func(s *hclspec.Spec) bool {
			return s.GetDefault().GetPrimary().GetAttr().GetName() == "engine" && s.GetDefault().GetDefault().GetLiteral().GetValue() == `"vllm"`
		}},
		{"array", Array(Literal("1"), Literal("2")), func(s *hclspec.Spec) bool { return len(s.GetArray().GetValues()) == 2 }},
	}
	for _, tt := range tests {
		if !tt.ok(tt.s) {
			t.Errorf("%s: built %v", tt.name, tt.s)
		}
	}
}
