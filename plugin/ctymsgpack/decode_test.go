package ctymsgpack

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
	ctymsgpack "github.com/zclconf/go-cty/cty/msgpack"

	"github.com/llmgw/llmgw/plugin/msgpackdump"
)

type mount struct {
	Source   string `codec:"source"`
	Target   string `codec:"target"`
	Readonly bool   `codec:"readonly"`
}

type auth struct {
	Username string `codec:"username"`
	Password string `codec:"password"`
}

type sheetConfig struct {
	Args        []string          `codec:"args"`
	Auth        *auth             `codec:"auth"`
	Count       int               `codec:"count"`
	Dflt        string            `codec:"dflt"`
	Enabled     bool              `codec:"enabled"`
	Image       string            `codec:"image"`
	Interp      string            `codec:"interp"`
	Labels      map[string]string `codec:"labels"`
	MissingList []string          `codec:"missing_list"`
	MissingStr  string            `codec:"missing_str"`
	Mount       []mount           `codec:"mount"`
	Neg         int8              `codec:"neg"`
	PortMap     map[string]int    `codec:"port_map"`
	Ratio       float64           `codec:"ratio"`
	Tenth       float64           `codec:"tenth"`
}

// TestFactSheetExample decodes the byte-for-byte example of section 8.2,
// which was captured from Nomad's own config pipeline.
func TestFactSheetExample(t *testing.T) {
	data := msgpackdump.Bytes(t, msgpackdump.ValueMappingExample)
	var got sheetConfig
	if err := Decode(data, &got); err != nil {
		t.Fatal(err)
	}
	want := sheetConfig{
		Args: []string{"-c", "echo hi"}, Auth: &auth{"u", "p"}, Count: 3, Dflt: "fallback", Enabled: true,
		Image: "docker.io/library/busybox:1.36", Interp: "23456:/local", Labels: map[string]string{"a": "b"},
		Mount: []mount{{"/src", "/dst", false}, {"/s2", "/d2", true}}, Neg: -7,
		PortMap: map[string]int{"http": 8080}, Ratio: 1.5, Tenth: 0.1,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("decoded config (-want +got):\n%s", d)
	}
}

type numbers struct {
	I   int64         `codec:"i"`
	U   uint16        `codec:"u"`
	F   float64       `codec:"f"`
	D   time.Duration `codec:"d"`
	Any any           `codec:"any"`
}

// TestCtyEncodings runs values through go-cty's own encoder, the one Nomad
// uses, and checks each number form decodes as the Go value expected.
func TestCtyEncodings(t *testing.T) {
	ty := cty.Object(map[string]cty.Type{"i": cty.Number, "u": cty.Number, "f": cty.Number, "d": cty.String, "any": cty.String})
	obj := func(i, u, f cty.Value, d string) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"i": i, "u": u, "f": f, "d": cty.StringVal(d), "any": cty.NullVal(cty.String)})
	}
	tests := []struct {
		name    string
		val     cty.Value
		want    numbers
		wantErr string
	}{
		{"small ints", obj(cty.NumberIntVal(-200), cty.NumberIntVal(8080), cty.NumberIntVal(2), "30s"),
			numbers{I: -200, U: 8080, F: 2, D: 30 * time.Second}, ""},
		{"decimal strings", obj(cty.NumberIntVal(70000), cty.NumberIntVal(1), cty.MustParseNumberVal("0.1"), "1m"),
			numbers{I: 70000, U: 1, F: 0.1, D: time.Minute}, ""},
		{"exact float", obj(cty.NumberIntVal(1), cty.NumberIntVal(1), cty.NumberFloatVal(2.5), "0s"),
			numbers{I: 1, U: 1, F: 2.5}, ""},
		{"fraction into int", obj(cty.NumberFloatVal(1.5), cty.NumberIntVal(1), cty.NumberIntVal(1), "0s"),
			numbers{}, "i: want a whole number, got 1.5"},
		{"beyond int64", obj(cty.MustParseNumberVal("18446744073709551616"), cty.NumberIntVal(1), cty.NumberIntVal(1), "0s"),
			numbers{}, `i: want a whole number, got "18446744073709551616"`},
		{"uint overflow", obj(cty.NumberIntVal(1), cty.NumberIntVal(70000), cty.NumberIntVal(1), "0s"),
			numbers{}, "u: 70000 is out of range"},
		{"negative uint", obj(cty.NumberIntVal(1), cty.NumberIntVal(-1), cty.NumberIntVal(1), "0s"),
			numbers{}, "u: -1 is out of range"},
		{"bad duration", obj(cty.NumberIntVal(1), cty.NumberIntVal(1), cty.NumberIntVal(1), "soon"),
			numbers{}, `d: invalid duration "soon"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := ctymsgpack.Marshal(tt.val, ty)
			if err != nil {
				t.Fatal(err)
			}
			var got numbers
			err = Decode(b, &got)
			if tt.wantErr != "" {
				var fe *FieldError
				if !errors.As(err, &fe) || err.Error() != tt.wantErr {
					t.Fatalf("got error %v; want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

type strict struct {
	Model string `codec:"model"`
	Shard *struct {
		Rank int `codec:"rank"`
	} `codec:"shard"`
	Args []string          `codec:"args"`
	Env  map[string]string `codec:"env"`
}

func TestErrorsNameTheAttribute(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"unknown attribute", `82 a5 "model" a1 "m" a5 "extra" c3`, "extra: unknown attribute"},
		{"wrong type", `81 a5 "model" 05`, "model: want a string, got number 5"},
		{"nested", `81 a5 "shard" 81 a4 "rank" a1 "x"`, `shard.rank: want a whole number, got "x"`},
		{"nested unknown", `81 a5 "shard" 81 a4 "ronk" 01`, "shard.ronk: unknown attribute"},
		{"list element", `81 a4 "args" 92 a1 "a" c3`, "args[1]: want a string, got bool"},
		{"map value", `81 a3 "env" 81 a1 "K" 01`, `env["K"]: want a string, got number 1`},
		{"object expected", `91 01`, "want an object, got a list"},
		{"truncated", `82 a5 "model"`, "ctymsgpack: malformed msgpack"},
		{"trailing", `80 c0`, "ctymsgpack: 1 trailing bytes after the config value"},
		{"empty", ``, "ctymsgpack: empty config"},
		{"unknown value ext", `81 a5 "model" d4 00 00`, "ctymsgpack: malformed msgpack"},
		{"too deep", strings.Repeat("91 ", 40) + "c0", "ctymsgpack: malformed msgpack at byte 33: nested deeper than 32 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s strict
			err := Decode(msgpackdump.Bytes(t, tt.data), &s)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("got error %v; want prefix %q", err, tt.want)
			}
		})
	}
}

func TestNullLeavesZero(t *testing.T) {
	s := strict{Model: "old", Args: []string{"x"}}
	if err := Decode(msgpackdump.Bytes(t, `83 a5 "model" c0 a5 "shard" c0 a4 "args" c0`), &s); err != nil {
		t.Fatal(err)
	}
	if s.Model != "" || s.Shard != nil || s.Args != nil {
		t.Errorf("got %+v; want nulls to clear the fields", s)
	}
}

func TestDecodeTarget(t *testing.T) {
	var s strict
	if err := Decode([]byte{0x80}, s); err == nil {
		t.Error("decoding into a non-pointer succeeded")
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte{0x80})
	f.Add([]byte{0x81, 0xa5, 'm', 'o', 'd', 'e', 'l', 0xa1, 'm'})
	f.Add([]byte{0x81, 0xa5, 's', 'h', 'a', 'r', 'd', 0x81, 0xa4, 'r', 'a', 'n', 'k', 0xcd, 0x1f, 0x90})
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		var s strict
		_ = Decode(data, &s)
		var m map[string]any
		_ = Decode(data, &m)
	})
}

func TestParseBoundsAllocation(t *testing.T) {
	tests := []string{
		`dd ff ff ff ff`,       // array32 claiming 4 billion elements
		`df 7f ff ff ff 01`,    // map32 claiming 2 billion pairs
		`db ff ff ff ff "abc"`, // str32 longer than the data
		`c1`,                   // never-used code
		`82 01 02 03 04`,       // integer keys
		`82 a1 "a" 01 a1 "a" 02`,
	}
	for _, in := range tests {
		if _, err := Parse(msgpackdump.Bytes(t, in)); err == nil {
			t.Errorf("Parse(%s) succeeded", in)
		}
	}
}

// BenchmarkDecodeTaskConfig decodes a realistic task config (a dozen
// attributes, a nested block, a list and a map), as StartTask does once per
// task start.
func BenchmarkDecodeTaskConfig(b *testing.B) {
	type shard struct {
		Rank          int    `codec:"rank"`
		Count         int    `codec:"count"`
		LeaderAddress string `codec:"leader_address"`
	}
	type task struct {
		Model   string            `codec:"model"`
		Name    string            `codec:"served_model_name"`
		Port    string            `codec:"port"`
		KV      bool              `codec:"kv_events"`
		Block   int               `codec:"block_size"`
		TP      int               `codec:"tensor_parallel_size"`
		DP      int               `codec:"data_parallel_size"`
		MaxLen  int               `codec:"max_model_len"`
		GPUUtil float64           `codec:"gpu_memory_utilization"`
		Shard   *shard            `codec:"shard"`
		Args    []string          `codec:"args"`
		Env     map[string]string `codec:"env"`
	}
	ty := cty.Object(map[string]cty.Type{
		"model": cty.String, "served_model_name": cty.String, "port": cty.String, "kv_events": cty.Bool,
		"block_size": cty.Number, "tensor_parallel_size": cty.Number, "data_parallel_size": cty.Number,
		"max_model_len": cty.Number, "gpu_memory_utilization": cty.Number,
		"shard": cty.Object(map[string]cty.Type{"rank": cty.Number, "count": cty.Number, "leader_address": cty.String}),
		"args":  cty.List(cty.String), "env": cty.Map(cty.String),
	})
	val := cty.ObjectVal(map[string]cty.Value{
		"model": cty.StringVal("Qwen/Qwen3-0.6B"), "served_model_name": cty.StringVal("qwen3"), "port": cty.StringVal("http"),
		"kv_events": cty.True, "block_size": cty.NumberIntVal(16), "tensor_parallel_size": cty.NumberIntVal(2),
		"data_parallel_size": cty.NumberIntVal(1), "max_model_len": cty.NumberIntVal(8192),
		"gpu_memory_utilization": cty.MustParseNumberVal("0.9"),
		"shard": cty.ObjectVal(map[string]cty.Value{"rank": cty.NumberIntVal(0), "count": cty.NumberIntVal(2),
			"leader_address": cty.StringVal("10.0.0.1:29500")}),
		"args": cty.ListVal([]cty.Value{cty.StringVal("--enforce-eager"), cty.StringVal("--seed"), cty.StringVal("7")}),
		"env":  cty.MapVal(map[string]cty.Value{"HF_HOME": cty.StringVal("/opt/hf")}),
	})
	data, err := ctymsgpack.Marshal(val, ty)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var t task
		if err := Decode(data, &t); err != nil {
			b.Fatal(err)
		}
	}
}
