package querytest

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/testcorpus"
)

// ExplainCase is one stanza of testdata/explain: a validator, a document
// that fails it, and the errInfo.details MongoDB gives for it.
type ExplainCase struct {
	Name    string
	File    string
	Filter  bsoncore.Document
	Doc     bsoncore.Document
	Details bsoncore.Document
}

// LoadExplain reads a file of explain stanzas (case, filter, doc, details).
func LoadExplain(file string) ([]ExplainCase, error) {
	var cases []ExplainCase
	err := testcorpus.ReadStanzas(file, func(stanza []testcorpus.Entry) error {
		c := ExplainCase{File: file}
		for _, e := range stanza {
			var err error
			switch e.Key {
			case "case":
				c.Name = e.Value
			case "filter":
				c.Filter, err = testcorpus.ParseDoc(e.Value)
			case "doc":
				c.Doc, err = testcorpus.ParseDoc(e.Value)
			case "details":
				c.Details, err = testcorpus.ParseDoc(e.Value)
			default:
				err = fmt.Errorf("unknown key %q", e.Key)
			}
			if err != nil {
				return fmt.Errorf("%s:%d: %v", file, e.Line+1, err)
			}
		}
		if c.Name == "" || c.Filter == nil || c.Doc == nil || c.Details == nil {
			return fmt.Errorf("%s:%d: a stanza needs case, filter, doc and details", file, stanza[0].Line+1)
		}
		cases = append(cases, c)
		return nil
	})
	return cases, err
}
