package scheduler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// DecodeParams decodes a plugin's JSON parameters strictly into p, which
// holds the defaults beforehand: unknown fields, trailing data and wrong
// types are errors. Empty input or null keeps the defaults. It is exported
// so that a plugin registered from outside the package (a Factory's
// params) rejects a misspelt parameter as the built-ins do, rather than
// silently running on its defaults.
func DecodeParams(raw []byte, p any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil {
		return fmt.Errorf("parameters: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("parameters: trailing data after the JSON object")
	}
	return nil
}

// Duration is a time.Duration written as a Go duration string ("2s", "10m").
type Duration time.Duration

// UnmarshalJSON accepts only duration strings, so "5" (seconds? ns?) is an
// error rather than a guess.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"2s\": %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}
