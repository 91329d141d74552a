/*
Copyright The OpenVPA Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package jsonread reads JSON documents that have already been validated
// (json.Valid) without reflection and, for keys and most values, without
// allocating, and appends JSON strings escaped exactly as encoding/json
// escapes them. The admission controller's hot path uses it to decode the
// few fields of an AdmissionReview and a pod it needs and to write patches.
package jsonread

import (
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// Kind is the kind of the next JSON value.
type Kind byte

// Value kinds, by their first byte.
const (
	Invalid Kind = 0
	Object  Kind = '{'
	Array   Kind = '['
	String  Kind = '"'
	Number  Kind = '0'
	Bool    Kind = 't'
	Null    Kind = 'n'
)

func (k Kind) String() string {
	switch k {
	case Object:
		return "object"
	case Array:
		return "array"
	case String:
		return "string"
	case Number:
		return "number"
	case Bool:
		return "boolean"
	case Null:
		return "null"
	}
	return "invalid value"
}

// ErrTruncated is returned when a document ends inside a value; it cannot
// happen for documents json.Valid accepted.
var ErrTruncated = errors.New("unexpected end of JSON input")

// Reader walks one validated JSON document. The zero value is not usable; set
// Data (and reset Pos) before reading.
type Reader struct {
	Data []byte
	Pos  int
	// scratch holds unescaped strings; slices returned by Str may point
	// into it and are valid until the next Str call.
	scratch []byte
}

// Reset starts reading data from the beginning, keeping scratch space.
func (r *Reader) Reset(data []byte) {
	r.Data = data
	r.Pos = 0
}

// ScratchCap is the capacity of the scratch space kept for unescaping, for
// callers that bound the memory they keep between documents.
func (r *Reader) ScratchCap() int { return cap(r.scratch) }

func (r *Reader) ws() {
	for r.Pos < len(r.Data) {
		switch r.Data[r.Pos] {
		case ' ', '\t', '\n', '\r':
			r.Pos++
		default:
			return
		}
	}
}

// Peek returns the kind of the next value without consuming it.
func (r *Reader) Peek() Kind {
	r.ws()
	if r.Pos >= len(r.Data) {
		return Invalid
	}
	switch c := r.Data[r.Pos]; c {
	case '{', '[', '"', 'n':
		return Kind(c)
	case 't', 'f':
		return Bool
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return Number
	}
	return Invalid
}

// TypeError says that a value of the wrong kind was found at a field.
type TypeError struct {
	Field string
	Want  Kind
	Got   Kind
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("%s: expected %s, got %s", e.Field, e.Want, e.Got)
}

// Expect fails with a TypeError unless the next value has kind k.
func (r *Reader) Expect(field string, k Kind) error {
	if got := r.Peek(); got != k {
		return &TypeError{Field: field, Want: k, Got: got}
	}
	return nil
}

// Object calls f for every member of the object that comes next; f must
// consume the member's value (read it or call Skip). The key slice is only
// valid during the call.
func (r *Reader) Object(field string, f func(key []byte) error) error {
	if err := r.Expect(field, Object); err != nil {
		return err
	}
	r.Pos++
	r.ws()
	if r.Pos < len(r.Data) && r.Data[r.Pos] == '}' {
		r.Pos++
		return nil
	}
	for {
		key, err := r.Str()
		if err != nil {
			return err
		}
		r.ws()
		if r.Pos >= len(r.Data) || r.Data[r.Pos] != ':' {
			return ErrTruncated
		}
		r.Pos++
		if err := f(key); err != nil {
			return err
		}
		if end, err := r.next('}', "object member"); end || err != nil {
			return err
		}
		r.ws()
	}
}

// Array calls f for every element of the array that comes next; f must
// consume the element.
func (r *Reader) Array(field string, f func(i int) error) error {
	if err := r.Expect(field, Array); err != nil {
		return err
	}
	r.Pos++
	r.ws()
	if r.Pos < len(r.Data) && r.Data[r.Pos] == ']' {
		r.Pos++
		return nil
	}
	for i := 0; ; i++ {
		if err := f(i); err != nil {
			return err
		}
		if end, err := r.next(']', "array element"); end || err != nil {
			return err
		}
	}
}

// next consumes what follows a member or element: the closing byte (end is
// true) or a comma.
func (r *Reader) next(closing byte, after string) (end bool, err error) {
	r.ws()
	if r.Pos >= len(r.Data) {
		return false, ErrTruncated
	}
	c := r.Data[r.Pos]
	r.Pos++
	switch c {
	case closing:
		return true, nil
	case ',':
		return false, nil
	}
	return false, fmt.Errorf("invalid character %q after %s", c, after)
}

// Str reads a string and returns its unescaped bytes (invalid UTF-8
// replaced by U+FFFD), which stay valid until
// the next call of Str (they may alias the document or scratch space).
func (r *Reader) Str() ([]byte, error) {
	r.ws()
	if r.Pos >= len(r.Data) || r.Data[r.Pos] != '"' {
		return nil, ErrTruncated
	}
	start := r.Pos + 1
	for i := start; i < len(r.Data); i++ {
		switch r.Data[i] {
		case '"':
			r.Pos = i + 1
			return r.Data[start:i], nil
		case '\\':
			return r.unescape(start)
		default:
			if r.Data[i] >= utf8.RuneSelf {
				// Invalid UTF-8 reads as U+FFFD, as in encoding/json.
				return r.unescape(start)
			}
		}
	}
	return nil, ErrTruncated
}

// simpleEscapes maps the character after a backslash to the byte it stands
// for; 0 for 'u' and for characters that are not escapes.
var simpleEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// unescape decodes the string starting at start (after the quote) the way
// encoding/json does, including replacing invalid surrogates with U+FFFD.
func (r *Reader) unescape(start int) ([]byte, error) {
	out := r.scratch[:0]
	d := r.Data
	i := start
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			r.Pos = i + 1
			r.scratch = out
			return out, nil
		case c == '\\':
			if i+1 >= len(d) {
				return nil, ErrTruncated
			}
			e := d[i+1]
			if v := simpleEscapes[e]; v != 0 {
				out = append(out, v)
				i += 2
				continue
			}
			if e != 'u' {
				return nil, fmt.Errorf("invalid escape %q", e)
			}
			rr, ok := hex4(d, i+2)
			if !ok {
				return nil, ErrTruncated
			}
			i += 6
			if utf16.IsSurrogate(rr) {
				rr2, ok := rune(-1), false
				if i+5 < len(d) && d[i] == '\\' && d[i+1] == 'u' {
					rr2, ok = hex4(d, i+2)
				}
				if dec := utf16.DecodeRune(rr, rr2); ok && dec != utf8.RuneError {
					i += 6
					rr = dec
				} else {
					rr = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, rr)
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			rr, size := utf8.DecodeRune(d[i:])
			if rr == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, d[i:i+size]...)
			}
			i += size
		}
	}
	return nil, ErrTruncated
}

func hex4(d []byte, i int) (rune, bool) {
	if i+4 > len(d) {
		return 0, false
	}
	var v rune
	for _, c := range d[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | rune(c)
	}
	return v, true
}

// Raw consumes the next value and returns its bytes as they appear in the
// document.
func (r *Reader) Raw() ([]byte, error) {
	r.ws()
	start := r.Pos
	if err := r.Skip(); err != nil {
		return nil, err
	}
	return r.Data[start:r.Pos], nil
}

// Skip consumes the next value.
func (r *Reader) Skip() error {
	r.ws()
	if r.Pos >= len(r.Data) {
		return ErrTruncated
	}
	switch r.Data[r.Pos] {
	case '"':
		for i := r.Pos + 1; i < len(r.Data); i++ {
			switch r.Data[i] {
			case '"':
				r.Pos = i + 1
				return nil
			case '\\':
				i++
			}
		}
		return ErrTruncated
	case '{', '[':
		depth := 0
		for i := r.Pos; i < len(r.Data); i++ {
			switch r.Data[i] {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					r.Pos = i + 1
					return nil
				}
			case '"':
				for i++; i < len(r.Data) && r.Data[i] != '"'; i++ {
					if r.Data[i] == '\\' {
						i++
					}
				}
			}
		}
		return ErrTruncated
	default:
		i := r.Pos
		for i < len(r.Data) {
			switch r.Data[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				r.Pos = i
				return nil
			}
			i++
		}
		r.Pos = i
		return nil
	}
}

// Literal consumes a number, true, false or null and returns its bytes.
func (r *Reader) Literal() []byte {
	r.ws()
	start := r.Pos
	_ = r.Skip()
	return r.Data[start:r.Pos]
}

// Bool reads true or false; null reads as false with isNull set.
func (r *Reader) Bool(field string) (v, isNull bool, err error) {
	switch k := r.Peek(); k {
	case Null:
		r.Literal()
		return false, true, nil
	case Bool:
		return r.Literal()[0] == 't', false, nil
	default:
		return false, false, &TypeError{Field: field, Want: Bool, Got: k}
	}
}

// StringOrNull reads a string, or null as nil with ok false.
func (r *Reader) StringOrNull(field string) (s []byte, ok bool, err error) {
	switch k := r.Peek(); k {
	case Null:
		r.Literal()
		return nil, false, nil
	case String:
		s, err = r.Str()
		return s, err == nil, err
	default:
		return nil, false, &TypeError{Field: field, Want: String, Got: k}
	}
}
