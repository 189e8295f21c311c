package main

import (
	"errors"

	"k8s.io/apimachinery/pkg/api/resource"
)

type quantityAnswer struct {
	Ok    bool   `json:"ok"`
	Sign  int    `json:"sign"`
	Error string `json:"error,omitempty"`
}

func quantity(input string) quantityAnswer {
	q, err := resource.ParseQuantity(input)
	switch {
	case errors.Is(err, resource.ErrFormatWrong):
		return quantityAnswer{Error: "format"}
	case errors.Is(err, resource.ErrSuffix):
		return quantityAnswer{Error: "suffix"}
	case errors.Is(err, resource.ErrNumeric):
		return quantityAnswer{Error: "numeric"}
	case err != nil:
		return quantityAnswer{Error: err.Error()}
	}
	// Not q.String(): for exponents such as 5e1500000000 it writes every digit.
	return quantityAnswer{Ok: true, Sign: q.Sign()}
}
