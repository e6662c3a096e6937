package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// printProtoJSON prints m as the API answers it in JSON, zero values included: a command's
// --json is its RPC's response.
func printProtoJSON(out io.Writer, m proto.Message) error {
	b, err := protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, string(b))
	return err
}

// printList prints a list command's answer: with --json (asJSON) its RPC's response res, else
// items as printTable prints them.
func printList[T any](out io.Writer, asJSON bool, res proto.Message, empty, header string, items []T, row func(T) []any) error {
	if asJSON {
		return printProtoJSON(out, res)
	}
	return printTable(out, empty, header, items, row)
}

// printTable prints items as a table under header (the column names, tab-separated), a row
// an item, each cell as %v prints it. With no item it prints empty instead, when set; else the
// bare header.
func printTable[T any](out io.Writer, empty, header string, items []T, row func(T) []any) error {
	if len(items) == 0 && empty != "" {
		_, err := fmt.Fprintln(out, empty)
		return err
	}
	tw := newTable(out)
	fmt.Fprintln(tw, header)
	for _, item := range items {
		for i, cell := range row(item) {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, cell)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// newTable aligns tab-separated columns as every table of the CLI is aligned.
func newTable(out io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(out, 0, 4, 2, ' ', 0) }

// orDash is s, or "-" for an empty cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
