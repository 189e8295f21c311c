package main

import "time"

type durationAnswer struct {
	Ok     bool   `json:"ok"`
	Nanos  int64  `json:"nanos"`
	String string `json:"string"`
	Error  string `json:"error,omitempty"`
}

func duration(input string) durationAnswer {
	d, err := time.ParseDuration(input)
	if err != nil {
		return durationAnswer{Error: err.Error()}
	}
	return durationAnswer{Ok: true, Nanos: int64(d), String: d.String()}
}
