package harmony

import "strings"

// schemaToTS converts a tool's JSON schema to the TypeScript-like type the
// library writes (HarmonyEncoding::json_schema_to_typescript), keyword for
// keyword: oneOf unions, type arrays, objects with their comments, string
// enums, arrays and scalars; anything else is "any".
func schemaToTS(s *node, indent string) string {
	if oneOf := s.get("oneOf"); oneOf != nil && oneOf.kind == 'a' {
		var b strings.Builder
		for _, v := range oneOf.arr {
			b.WriteString("\n" + indent + " | ")
			b.WriteString(nullable(v, schemaToTS(v, indent+"   ")))
			var trailing []string
			if d, ok := v.get("description").asStr(); ok {
				trailing = append(trailing, d)
			}
			if d := v.get("default"); d != nil {
				trailing = append(trailing, "default: "+defaultText(v, d, true))
			}
			if len(trailing) > 0 {
				b.WriteString(" // " + strings.Join(trailing, " "))
			}
		}
		return b.String()
	}
	if types := s.get("type"); types != nil && types.kind == 'a' {
		var out []string
		for _, t := range types.arr {
			if str, ok := t.asStr(); ok {
				if str == "integer" {
					str = "number"
				}
				out = append(out, str)
			}
		}
		if len(out) > 0 {
			return strings.Join(out, " | ")
		}
	}
	ty, ok := s.get("type").asStr()
	if !ok {
		return "any"
	}
	switch ty {
	case "object":
		return objectToTS(s, indent)
	case "string":
		if enum := s.get("enum"); enum != nil && enum.kind == 'a' {
			var vals []string
			for _, v := range enum.arr {
				if str, ok := v.asStr(); ok {
					vals = append(vals, `"`+str+`"`)
				}
			}
			if len(vals) > 0 {
				return strings.Join(vals, " | ")
			}
		}
		return "string"
	case "number", "integer":
		return "number"
	case "boolean":
		return "boolean"
	case "array":
		if items := s.get("items"); items != nil {
			return schemaToTS(items, indent) + "[]"
		}
		return "Array<any>"
	}
	return "any"
}

// isEnum reports whether s has a non-empty enum array.
func isEnum(s *node) bool {
	e := s.get("enum")
	return e != nil && e.kind == 'a' && len(e.arr) > 0
}

// nullable appends " | null" to a variant marked nullable.
func nullable(s *node, ts string) string {
	if n := s.get("nullable"); n != nil && n.kind == 'b' && n.b && !strings.Contains(ts, "null") {
		return ts + " | null"
	}
	return ts
}

// defaultText writes a default value: a string quoted unless s is an enum
// (then bare), anything else as compact JSON. quoteEnum keeps the quotes
// for enums too, as the library does for oneOf variants at top level.
func defaultText(s, d *node, quoteEnum bool) string {
	if str, ok := d.asStr(); ok {
		if !isEnum(s) {
			return `"` + str + `"`
		}
		if quoteEnum {
			return d.String()
		}
		return str
	}
	return d.String()
}

// objectToTS renders an object schema with one line per property.
func objectToTS(s *node, indent string) string {
	var b strings.Builder
	if d, ok := s.get("description").asStr(); ok {
		b.WriteString(indent + "// " + d + "\n")
	}
	b.WriteString("{\n")
	props := s.get("properties")
	if props != nil && props.kind == 'o' {
		required := map[string]bool{}
		if req := s.get("required"); req != nil && req.kind == 'a' {
			for _, r := range req.arr {
				if str, ok := r.asStr(); ok {
					required[str] = true
				}
			}
		}
		for i, key := range props.keys {
			writeProperty(&b, key, props.vals[i], required[key], indent)
		}
	}
	b.WriteString(indent + "}")
	return b.String()
}

// writeProperty writes one property: its comments, then "name?: type,".
func writeProperty(b *strings.Builder, key string, val *node, required bool, indent string) {
	opt := "?"
	if required {
		opt = ""
	}
	if t, ok := val.get("title").asStr(); ok {
		b.WriteString(indent + "// " + t + "\n" + indent + "//\n")
	}
	oneOf := val.get("oneOf")
	if oneOf == nil {
		if d, ok := val.get("description").asStr(); ok {
			b.WriteString(indent + "// " + d + "\n")
		}
	}
	if ex := val.get("examples"); ex != nil && ex.kind == 'a' && len(ex.arr) > 0 {
		b.WriteString(indent + "// Examples:\n")
		for _, e := range ex.arr {
			if str, ok := e.asStr(); ok {
				b.WriteString(indent + "// - \"" + str + "\"\n")
			}
		}
	}
	if oneOf != nil && oneOf.kind == 'a' {
		writeOneOfProperty(b, key+opt, val, oneOf, indent)
		return
	}
	b.WriteString(indent + key + opt + ": " + nullable(val, schemaToTS(val, indent+"    ")) + ",")
	if oneOf == nil {
		if d := val.get("default"); d != nil {
			b.WriteString(" // default: " + defaultText(val, d, false))
		}
	}
	b.WriteString("\n")
}

// writeOneOfProperty writes a property whose schema is a oneOf: comments
// above, then one " | variant" line per variant.
func writeOneOfProperty(b *strings.Builder, name string, val, oneOf *node, indent string) {
	propDesc, hasDesc := val.get("description").asStr()
	skip := false
	if hasDesc && len(oneOf.arr) > 0 {
		if vd, ok := oneOf.arr[0].get("description").asStr(); ok && vd == propDesc {
			skip = true
		}
	}
	above := false
	if hasDesc && !skip {
		b.WriteString(indent + "// " + propDesc + "\n")
		above = true
	}
	if d := val.get("default"); d != nil {
		b.WriteString(indent + "// default: " + defaultText(val, d, false) + "\n")
	}
	b.WriteString(indent + name + ":\n")
	for i, v := range oneOf.arr {
		b.WriteString(indent + " | " + nullable(v, schemaToTS(v, indent+"   ")))
		var trailing []string
		if !(i == 0 && above) {
			if d, ok := v.get("description").asStr(); ok && !(hasDesc && d == propDesc) {
				trailing = append(trailing, d)
			}
		}
		if d := v.get("default"); d != nil {
			trailing = append(trailing, "default: "+defaultText(v, d, false))
		}
		if len(trailing) > 0 {
			b.WriteString(" // " + strings.Join(trailing, " "))
		}
		b.WriteString("\n")
	}
	b.WriteString(indent + ",\n")
}
