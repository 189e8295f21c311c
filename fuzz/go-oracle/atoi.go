package main

import "strconv"

// strconv.Atoi; nil (JSON null) when it fails.
func atoi(input string) *int64 {
	n, err := strconv.Atoi(input)
	if err != nil {
		return nil
	}
	v := int64(n)
	return &v
}
