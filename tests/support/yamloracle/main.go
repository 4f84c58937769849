// Command yamloracle reads YAML the way Go's Kubernetes tools read it: devlane's test oracle for "what devlane
// writes, every YAML reader reads the same" (tests/support/yamloracle.py drives it; tests/setup_yamloracle.sh
// builds it outside the repository).
//
// Stdin: one JSON string per line, each a YAML stream (a file as devlane writes it, or `kubectl kustomize`'s
// output). Stdout: one JSON object per input line, flushed at once, {"v2": [doc...], "v3": [doc...],
// "sigs": [doc...]}: the documents each reader got.
//
//   - v2: go.yaml.in/yaml/v2 decoding each document into interface{} (what sigs.k8s.io/yaml, hence kubectl
//     apply/create, the API machinery and Argo CD, read files with);
//   - v3: go.yaml.in/yaml/v3 decoding into interface{} (kustomize's kyaml, Flux; kyaml's nodes get their tags
//     from the same resolver);
//   - sigs: the stream split into documents as k8s.io/apimachinery's YAMLReader splits it, each converted by
//     sigs.k8s.io/yaml.YAMLToJSON (typed keys become strings there) and read back as JSON.
//
// Every scalar, and every mapping key, is written "type:text": str, int, float, bool, null, time (v3's
// timestamps), number (a JSON number of sigs), or other:<Go type>. Empty documents are skipped, as kubectl
// skips them. A reader that fails gives {"error": "..."} in place of its list.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	yamlv2 "go.yaml.in/yaml/v2"
	yamlv3 "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<30)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		var stream string
		if err := json.Unmarshal(in.Bytes(), &stream); err != nil {
			fmt.Fprintf(os.Stderr, "yamloracle: an input line is not a JSON string: %v\n", err)
			os.Exit(2)
		}
		line, err := json.Marshal(map[string]interface{}{
			"v2": readV2([]byte(stream)), "v3": readV3([]byte(stream)), "sigs": readSigs([]byte(stream)),
		})
		if err != nil {
			line, _ = json.Marshal(map[string]string{"error": err.Error()})
		}
		out.Write(line)
		out.WriteByte('\n')
		out.Flush()
	}
	if err := in.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "yamloracle: %v\n", err)
		os.Exit(2)
	}
}

func failed(err error) interface{} { return map[string]string{"error": err.Error()} }

// decoder is what go-yaml v2's and v3's decoders have in common.
type decoder interface{ Decode(v interface{}) error }

func readV2(stream []byte) interface{} { return readAll(yamlv2.NewDecoder(bytes.NewReader(stream))) }

func readV3(stream []byte) interface{} { return readAll(yamlv3.NewDecoder(bytes.NewReader(stream))) }

// readAll decodes every document of the stream into interface{}.
func readAll(dec decoder) interface{} {
	docs := []interface{}{}
	for {
		var doc interface{}
		err := dec.Decode(&doc)
		if err == io.EOF {
			return docs
		}
		if err != nil {
			return failed(err)
		}
		if doc != nil {
			docs = append(docs, typed(doc))
		}
	}
}

// readSigs reads the stream as kubectl does: k8s.io/apimachinery/pkg/util/yaml's YAMLReader cuts it at lines
// that start with "---" followed by nothing but blanks or a comment (anything else there is its error), and each
// part goes through YAMLToJSON.
func readSigs(stream []byte) interface{} {
	docs := []interface{}{}
	parts, err := documents(stream)
	if err != nil {
		return failed(err)
	}
	for _, part := range parts {
		data, err := sigsyaml.YAMLToJSON(part)
		if err != nil {
			return failed(err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var doc interface{}
		if err := dec.Decode(&doc); err != nil {
			return failed(err)
		}
		if doc != nil {
			docs = append(docs, typed(doc))
		}
	}
	return docs
}

func documents(stream []byte) ([][]byte, error) {
	var parts [][]byte
	var part []byte
	for _, line := range bytes.SplitAfter(stream, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("---")) {
			rest := strings.TrimSpace(string(line[3:]))
			if rest != "" && rest[0] != '#' {
				return nil, fmt.Errorf("invalid document separator: %s", strings.TrimSpace(string(line)))
			}
			if len(part) > 0 {
				parts = append(parts, part)
			}
			part = nil
			continue
		}
		part = append(part, line...)
	}
	if len(part) > 0 {
		parts = append(parts, part)
	}
	return parts, nil
}

// typed writes every scalar and key of a decoded document as "type:text".
func typed(v interface{}) interface{} {
	switch v := v.(type) {
	case map[interface{}]interface{}:
		out := make(map[string]interface{}, len(v))
		for k, item := range v {
			out[scalar(k)] = typed(item)
		}
		return out
	case map[string]interface{}:
		out := make(map[string]interface{}, len(v))
		for k, item := range v {
			out["str:"+k] = typed(item)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(v))
		for i, item := range v {
			out[i] = typed(item)
		}
		return out
	}
	return scalar(v)
}

func scalar(v interface{}) string {
	switch v := v.(type) {
	case nil:
		return "null:"
	case string:
		return "str:" + v
	case bool:
		return "bool:" + strconv.FormatBool(v)
	case int:
		return "int:" + strconv.Itoa(v)
	case int64:
		return "int:" + strconv.FormatInt(v, 10)
	case uint64:
		return "int:" + strconv.FormatUint(v, 10)
	case float64:
		return "float:" + strconv.FormatFloat(v, 'g', -1, 64) // +Inf, -Inf, NaN for the specials
	case time.Time:
		return "time:" + v.Format(time.RFC3339Nano)
	case json.Number:
		return "number:" + v.String()
	}
	return fmt.Sprintf("other:%T:%v", v, v)
}
