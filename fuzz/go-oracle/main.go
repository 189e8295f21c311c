// The Go originals the Rust parsers are fuzzed against: one JSON request per line on stdin,
// one JSON answer per line on stdout.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

type request struct {
	Op       string          `json:"op"`
	Input    string          `json:"input"`
	Nanos    int64           `json:"nanos"`
	Template json.RawMessage `json:"template,omitempty"`
}

func main() {
	go exitWithParent()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	encoder := json.NewEncoder(out)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintf(os.Stderr, "go-oracle: bad request: %v\n", err)
			os.Exit(2)
		}
		var answer any
		switch req.Op {
		case "duration":
			answer = duration(req.Input)
		case "duration_string":
			answer = time.Duration(req.Nanos).String()
		case "atoi":
			answer = atoi(req.Input)
		case "quantity":
			answer = quantity(req.Input)
		case "path":
			answer = path(req.Template, req.Input)
		default:
			fmt.Fprintf(os.Stderr, "go-oracle: unknown op %q\n", req.Op)
			os.Exit(2)
		}
		if err := encoder.Encode(answer); err != nil {
			fmt.Fprintf(os.Stderr, "go-oracle: %v\n", err)
			os.Exit(2)
		}
		if err := out.Flush(); err != nil {
			os.Exit(2)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "go-oracle: %v\n", err)
		os.Exit(2)
	}
}

// A fuzzer that libFuzzer kills for a timeout leaves the oracle computing (ParseQuantity on a
// huge exponent takes minutes); it must not outlive its parent.
func exitWithParent() {
	parent := os.Getppid()
	for range time.Tick(time.Second) {
		if os.Getppid() != parent {
			os.Exit(3)
		}
	}
}
