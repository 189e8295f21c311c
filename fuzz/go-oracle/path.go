package main

import (
	"bytes"
	"encoding/json"

	"github.com/project-codeflare/appwrapper/pkg/utils"
)

type pathAnswer struct {
	Ok    bool   `json:"ok"`
	Value any    `json:"value,omitempty"`
	Error string `json:"error,omitempty"`
}

// The reference's podSet path walk (GetRawTemplate) over a JSON template; numbers keep their text.
func path(template json.RawMessage, input string) pathAnswer {
	decoder := json.NewDecoder(bytes.NewReader(template))
	decoder.UseNumber()
	var object map[string]any
	if err := decoder.Decode(&object); err != nil {
		return pathAnswer{Error: "template: " + err.Error()}
	}
	value, err := utils.GetRawTemplate(object, input)
	if err != nil {
		return pathAnswer{Error: err.Error()}
	}
	return pathAnswer{Ok: true, Value: value}
}
