// Package ctymsgpack decodes the configs Nomad sends to plugins: an HCL
// config decoded with the plugin's hclspec schema, then encoded with go-cty's
// msgpack encoding. That encoding has quirks a plain msgpack decoder trips
// on: every schema attribute is present (absent ones as nil), integers use
// the smallest encoding, and numbers that are not exact float64 values (0.1,
// or integers beyond 64 bits) arrive as decimal strings.
//
// Decoding is strict, since the schema and the Go struct must agree: a key the
// struct does not declare, or a value of the wrong kind, is an error that
// names the attribute. It never panics on hostile bytes.
//
// This package knows nothing about Nomad's RPCs or about any driver.
package ctymsgpack

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FieldError says which attribute of a config is wrong and why.
type FieldError struct {
	Path string // dotted attribute path, e.g. "shard.rank" or "args[2]"
	Msg  string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// MaxDepth bounds the nesting of decoded values: configs are a few levels
// deep, and hostile input must not recurse without bound.
const MaxDepth = 32

// Decode decodes one go-cty msgpack value from data into out, a non-nil
// pointer. Struct fields are matched by their `codec:"name"` tag (untagged
// fields and `codec:"-"` are skipped). Supported targets: structs, pointers,
// string, bool, integers, floats, time.Duration (from a duration string such
// as "30s"), slices, map[string]T and any.
func Decode(data []byte, out any) error {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("ctymsgpack: decode target must be a non-nil pointer, got %T", out)
	}
	v, err := Parse(data)
	if err != nil {
		return err
	}
	return assign(rv.Elem(), v, "")
}

var durationType = reflect.TypeFor[time.Duration]()

func assign(dst reflect.Value, v any, path string) error {
	if v == nil {
		dst.SetZero() // absent attribute or null block
		return nil
	}
	if dst.Type() == durationType {
		return assignDuration(dst, v, path)
	}
	switch dst.Kind() {
	case reflect.Interface:
		if dst.NumMethod() != 0 {
			return &FieldError{path, fmt.Sprintf("cannot decode into %s", dst.Type())}
		}
		dst.Set(reflect.ValueOf(v))
		return nil
	case reflect.Pointer:
		p := reflect.New(dst.Type().Elem())
		if err := assign(p.Elem(), v, path); err != nil {
			return err
		}
		dst.Set(p)
		return nil
	case reflect.Struct:
		return assignStruct(dst, v, path)
	case reflect.Slice:
		list, ok := v.([]any)
		if !ok {
			return mismatch(path, "a list", v)
		}
		s := reflect.MakeSlice(dst.Type(), len(list), len(list))
		for i, e := range list {
			if err := assign(s.Index(i), e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		dst.Set(s)
		return nil
	case reflect.Map:
		return assignMap(dst, v, path)
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			return mismatch(path, "a string", v)
		}
		dst.SetString(s)
		return nil
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			return mismatch(path, "a bool", v)
		}
		dst.SetBool(b)
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := toInt(v, path)
		if err != nil {
			return err
		}
		if dst.OverflowInt(n) {
			return &FieldError{path, fmt.Sprintf("%d is out of range", n)}
		}
		dst.SetInt(n)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := toInt(v, path)
		if err != nil {
			return err
		}
		if n < 0 || dst.OverflowUint(uint64(n)) {
			return &FieldError{path, fmt.Sprintf("%d is out of range", n)}
		}
		dst.SetUint(uint64(n))
		return nil
	case reflect.Float32, reflect.Float64:
		f, err := toFloat(v, path)
		if err != nil {
			return err
		}
		dst.SetFloat(f)
		return nil
	}
	return &FieldError{path, fmt.Sprintf("cannot decode into %s", dst.Type())}
}

func assignStruct(dst reflect.Value, v any, path string) error {
	m, ok := v.(map[string]any)
	if !ok {
		return mismatch(path, "an object", v)
	}
	fields := map[string]int{}
	t := dst.Type()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("codec"), ",")
		if name != "" && name != "-" && t.Field(i).IsExported() {
			fields[name] = i
		}
	}
	for _, k := range sortedKeys(m) {
		i, ok := fields[k]
		if !ok {
			return &FieldError{join(path, k), "unknown attribute"}
		}
		if err := assign(dst.Field(i), m[k], join(path, k)); err != nil {
			return err
		}
	}
	return nil
}

func assignMap(dst reflect.Value, v any, path string) error {
	if dst.Type().Key().Kind() != reflect.String {
		return &FieldError{path, fmt.Sprintf("cannot decode into %s", dst.Type())}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return mismatch(path, "a map", v)
	}
	out := reflect.MakeMapWithSize(dst.Type(), len(m))
	for _, k := range sortedKeys(m) {
		e := reflect.New(dst.Type().Elem()).Elem()
		if err := assign(e, m[k], fmt.Sprintf("%s[%q]", path, k)); err != nil {
			return err
		}
		out.SetMapIndex(reflect.ValueOf(k).Convert(dst.Type().Key()), e)
	}
	dst.Set(out)
	return nil
}

func assignDuration(dst reflect.Value, v any, path string) error {
	s, ok := v.(string)
	if !ok {
		return mismatch(path, `a duration string such as "30s"`, v)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return &FieldError{path, fmt.Sprintf("invalid duration %q", s)}
	}
	dst.SetInt(int64(d))
	return nil
}

// toInt accepts every integer encoding, an integral float, and a decimal
// string (how go-cty sends integers beyond 64 bits).
func toInt(v any, path string) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case uint64:
		if x > math.MaxInt64 {
			return 0, &FieldError{path, fmt.Sprintf("%d is out of range", x)}
		}
		return int64(x), nil
	case float64:
		if x != math.Trunc(x) || math.IsInf(x, 0) || math.Abs(x) >= 1<<63 {
			return 0, &FieldError{path, fmt.Sprintf("want a whole number, got %v", x)}
		}
		return int64(x), nil
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return 0, &FieldError{path, fmt.Sprintf("want a whole number, got %q", x)}
		}
		return n, nil
	}
	return 0, mismatch(path, "a whole number", v)
}

// toFloat accepts integers, floats, and the decimal strings go-cty sends
// for numbers that are not exact float64 values (0.1).
func toFloat(v any, path string) (float64, error) {
	switch x := v.(type) {
	case int64:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	case float64:
		return x, nil
	case string:
		f, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return 0, &FieldError{path, fmt.Sprintf("want a number, got %q", x)}
		}
		return f, nil
	}
	return 0, mismatch(path, "a number", v)
}

func mismatch(path, want string, got any) error {
	return &FieldError{path, fmt.Sprintf("want %s, got %s", want, kind(got))}
}

func kind(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 40 {
			x = x[:40] + "..."
		}
		return fmt.Sprintf("string %q", x)
	case bool:
		return "bool"
	case int64, uint64, float64:
		return fmt.Sprintf("number %v", x)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Sorted so the first error reported is deterministic.
	slices.Sort(keys)
	return keys
}
