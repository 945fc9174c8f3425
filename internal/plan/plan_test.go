package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/tools"
)

// entry is a minimal inventory entry for validation (names and kinds only:
// validation never calls a tool).
type entry struct{ name, kind string }

func (e entry) Name() string            { return e.name }
func (e entry) Kind() string            { return e.kind }
func (e entry) Description() string     { return "" }
func (e entry) Schema() json.RawMessage { return tools.DefaultSchema }
func (e entry) Call(context.Context, *tools.Call) tools.Outcome {
	return tools.Outcome{Err: fmt.Errorf("not called in validation")}
}

func testCatalog(t testing.TB) *Catalog {
	inv := tools.NewInventory("local/planner")
	for _, e := range []entry{{"acme/echo", tools.KindWASM}, {"acme/fetch", tools.KindWASM}, {"bob/fetch", tools.KindWASM},
		{"submit-plan", tools.KindRuntime}, {"delegate-task", tools.KindRuntime}, {"bash", tools.KindShell}, {"git", tools.KindShell}} {
		if err := inv.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	names := map[string]tools.Entry{}
	for _, e := range inv.Entries() {
		n := e.Name()
		if n == "acme/echo" {
			n = "echo"
		} else if strings.Contains(n, "/") {
			n = strings.ReplaceAll(n, "/", "__")
		}
		names[n] = e
	}
	return NewCatalog(inv, names, []string{"bash", "git"}, []string{"acme/worker"})
}

// Each check's sentence, word for word, and every error collected.
func TestValidationSentences(t *testing.T) {
	cat := testCatalog(t)
	big := `{"id":"p","steps":[],"x":"` + strings.Repeat("a", MaxInputBytes) + `"}`
	cases := []struct {
		name, plan string
		want       []string
	}{
		{"size", big, []string{fmt.Sprintf("the plan is %d bytes; a plan is at most 1048576 bytes", len(big))}},
		{"id and steps", `{}`, []string{`the plan needs "id", a string of 1 to 128 bytes`, `the plan needs "steps", a list of at most 100 step objects`}},
		{"id long", `{"id":"` + strings.Repeat("x", 129) + `","steps":[]}`, []string{`the plan needs "id", a string of 1 to 128 bytes`}},
		{"steps too many", `{"id":"p","steps":[` + strings.Repeat(`{"id":"a","tool":"echo"},`, 100) + `{"id":"a","tool":"echo"}]}`, []string{`the plan needs "steps", a list of at most 100 step objects`}},
		{"unknown plan key", `{"id":"p","steps":[],"zz":1,"aa":2}`, []string{`the plan has an unknown key "aa"; a plan holds "id" and "steps"`, `the plan has an unknown key "zz"; a plan holds "id" and "steps"`}},
		{"step not object", `{"id":"p","steps":[3]}`, []string{`steps[0] is not an object`}},
		{"step null", `{"id":"p","steps":[{"id":"a","tool":"echo"},null]}`, []string{`steps[1] is not an object`}},
		{"steps null", `{"id":"p","steps":null}`, []string{`the plan needs "steps", a list of at most 100 step objects`}},
		{"steps object", `{"id":"p","steps":{}}`, []string{`the plan needs "steps", a list of at most 100 step objects`}},
		{"step id", `{"id":"p","steps":[{"id":"a b","tool":"echo"}]}`, []string{`steps[0]: "id" must be 1 to 64 characters, each a letter, a digit, _ or -`}},
		{"duplicate", `{"id":"p","steps":[{"id":"a","tool":"echo"},{"id":"a","tool":"echo"}]}`, []string{`step a: another step has this id`}},
		{"unknown step key", `{"id":"p","steps":[{"id":"a","tool":"echo","when":1}]}`, []string{`step a: unknown key "when"`}},
		{"kind none", `{"id":"p","steps":[{"id":"a"}]}`, []string{`step a: give exactly one of "tool", "shell" and "capsule"`}},
		{"kind two", `{"id":"p","steps":[{"id":"a","tool":"echo","shell":"git status"}]}`, []string{`step a: give exactly one of "tool", "shell" and "capsule"`}},
		{"unknown tool", `{"id":"p","steps":[{"id":"a","tool":"nope"}]}`, []string{`step a: there is no tool named "nope"; a step may call acme__fetch, bob__fetch, echo`}},
		{"submit-plan", `{"id":"p","steps":[{"id":"a","tool":"submit-plan"}]}`, []string{`step a: a plan cannot submit a plan`}},
		{"delegate-task", `{"id":"p","steps":[{"id":"a","tool":"delegate-task"}]}`, []string{`step a: a plan delegates with a "capsule" step, not with delegate-task`}},
		{"shell tool", `{"id":"p","steps":[{"id":"a","tool":"bash"}]}`, []string{`step a: bash is a shell tool; run a command with a "shell" step`}},
		{"tool input", `{"id":"p","steps":[{"id":"a","tool":"echo","input":[1]}]}`, []string{`step a: a tool step's "input" must be a JSON object`}},
		{"shell input", `{"id":"p","steps":[{"id":"a","shell":"git status","input":{}}]}`, []string{`step a: a shell step takes no "input"; its command line is the "shell" value`}},
		{"empty line", `{"id":"p","steps":[{"id":"a","shell":"  "}]}`, []string{`step a: the "shell" command line is empty`}},
		{"NUL", `{"id":"p","steps":[{"id":"a","shell":"git \u0000"}]}`, []string{`step a: the "shell" command line must be under 1 MiB and hold no NUL byte`}},
		{"quote", `{"id":"p","steps":[{"id":"a","shell":"git 'x"}]}`, []string{`step a: the "shell" command line has an open quote or a final lone backslash`}},
		{"binary", `{"id":"p","steps":[{"id":"a","shell":"rm -rf x"}]}`, []string{`step a: "rm" is not in capabilities.shell.allow (bash, git)`}},
		{"capsule name", `{"id":"p","steps":[{"id":"a","capsule":"Acme/W","input":{"version":"1","task":"t"}}]}`, []string{`step a: "Acme/W" is not a capsule name: <scope>/<name> or a bare name, each part [a-z0-9][a-z0-9-]{0,62}`}},
		{"capsule input", `{"id":"p","steps":[{"id":"a","capsule":"worker","input":{"task":"t"}}]}`, []string{`step a: a capsule step's "input" must be {"version": string, "task": string}`}},
		{"capsule version", `{"id":"p","steps":[{"id":"a","capsule":"worker","input":{"version":"latest","task":"t"}}]}`, []string{`step a: "version" must be an exact version; latest, stable and edge resolve to nothing`}},
		{"depends_on shape", `{"id":"p","steps":[{"id":"a","tool":"echo","depends_on":"b"}]}`, []string{`step a: "depends_on" must be a list of step ids`}},
		{"depends_on target", `{"id":"p","steps":[{"id":"a","tool":"echo","depends_on":["b"]}]}`, []string{`step a: it depends on "b", which is not a step of this plan`}},
		{"on_error", `{"id":"p","steps":[{"id":"a","tool":"echo","on_error":"retry"}]}`, []string{`step a: "on_error" must be fail, skip or continue`}},
		{"retries", `{"id":"p","steps":[{"id":"a","tool":"echo","retries":6}]}`, []string{`step a: "retries" must be a whole number from 0 to 5`}},
		{"retries fraction", `{"id":"p","steps":[{"id":"a","tool":"echo","retries":1.5}]}`, []string{`step a: "retries" must be a whole number from 0 to 5`}},
		{"if type", `{"id":"p","steps":[{"id":"a","tool":"echo","if":true}]}`, []string{`step a: "if" must be a string`}},
		{"if syntax", `{"id":"p","steps":[{"id":"a","tool":"echo","if":"'x' = 'y'"}]}`, []string{`step a: the condition cannot be read at character 5: expected ==, !=, < or >`}},
		{"ref target", `{"id":"p","steps":[{"id":"a","tool":"echo","input":{"m":"$zz.output"}}]}`, []string{`step a: $zz.output names no step of this plan`}},
		{"ref field", `{"id":"p","steps":[{"id":"b","tool":"echo"},{"id":"a","tool":"echo","depends_on":["b"],"if":"$b.exit == '0'"}]}`, []string{`step a: $b.exit: a step's fields are output and status`}},
		{"ref order", `{"id":"p","steps":[{"id":"b","tool":"echo"},{"id":"a","tool":"echo","input":{"m":"got $b.output"}}]}`, []string{`step a: it uses $b.output but does not depend on b; add "b" to its depends_on`}},
		{"cycle", `{"id":"p","steps":[{"id":"a","tool":"echo","depends_on":["c"]},{"id":"b","tool":"echo","depends_on":["a"]},{"id":"c","tool":"echo","depends_on":["b"]},{"id":"d","tool":"echo","depends_on":["d"]}]}`,
			[]string{`steps a, b, c depend on one another in a cycle`, `step d depends on itself in a cycle`}},
		{"collected", `{"id":"","steps":[{"id":"a","tool":"nope","retries":-1},{"id":"b","shell":"rm x"}]}`,
			[]string{`the plan needs "id", a string of 1 to 128 bytes`, `step a: there is no tool named "nope"; a step may call acme__fetch, bob__fetch, echo`, `step a: "retries" must be a whole number from 0 to 5`, `step b: "rm" is not in capabilities.shell.allow (bash, git)`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, errs := Parse([]byte(c.plan), cat)
			if p != nil {
				t.Fatalf("plan accepted")
			}
			if strings.Join(errs, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(errs, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// More than 20 errors: the first 20, then "… and <n> more".
func TestErrorsShown(t *testing.T) {
	var steps []string
	for i := 0; i < 25; i++ {
		steps = append(steps, fmt.Sprintf(`{"id":"s%d","tool":"nope"}`, i))
	}
	_, errs := Parse([]byte(`{"id":"p","steps":[`+strings.Join(steps, ",")+`]}`), testCatalog(t))
	shown := errs.Shown()
	if len(errs) != 25 || len(shown) != 21 || shown[20] != "… and 5 more" {
		t.Fatalf("%d errors, shown %q", len(errs), shown[18:])
	}
}

// A good plan: names resolved (model name, full name, unique bare name),
// defaults applied, capsule names made full.
func TestParseGood(t *testing.T) {
	p, errs := Parse([]byte(`{"id":"build","steps":[
	 {"id":"a","tool":"echo"},
	 {"id":"b","tool":"acme/fetch","input":{"url":"$a.output"},"depends_on":["a"],"retries":2},
	 {"id":"c","shell":"git log --format='%H %s'","depends_on":["b"],"if":"$a.status == \"success\" && $b.output != ''","on_error":"continue"},
	 {"id":"d","capsule":"worker","input":{"version":"1.0.0","task":"sum $c.output"},"depends_on":["c"]},
	 {"id":"e","capsule":"other","input":{"version":"2","task":"x"}}]}`), testCatalog(t))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	s := p.Steps
	if p.ID != "build" || s[0].Entry.Name() != "acme/echo" || s[1].Entry.Name() != "acme/fetch" || s[1].Retries != 2 || s[0].OnError != "fail" {
		t.Errorf("%+v %+v", s[0], s[1])
	}
	if strings.Join(s[2].Argv, "|") != "git|log|--format=%H %s" || s[2].OnError != "continue" || s[2].Cond == nil {
		t.Errorf("%+v", s[2])
	}
	if s[3].Capsule != "acme/worker" || s[3].Bare != "worker" || s[3].Version != "1.0.0" || s[4].Capsule != "local/other" {
		t.Errorf("%+v %+v", s[3], s[4])
	}
}

func TestConditions(t *testing.T) {
	vals := map[string]string{"a.output": "10", "a.status": "success", "b.output": "", "b.status": "skipped"}
	value := func(r Ref) string { return vals[r.Step+"."+r.Field] }
	cases := []struct {
		cond string
		want bool
	}{
		{"", true},
		{"  \n", true},
		{`$a.status == "success"`, true},
		{`$a.status=='success'`, true},
		{`$a.status != "success"`, false},
		{`"10" < "9"`, true},
		{`$a.output > "9"`, false},
		{`$b.output == ''`, true},
		{`$a.status == "failed" || $b.status == "skipped"`, true},
		{`$a.status == "failed" || $b.status == "skipped" && $a.output == "x"`, false},
		{`$a.status == "success" || $b.status == "x" && $a.output == "x"`, true},
		{`"a&&b" == 'a&&b'`, true},
		{`'say "hi"' != "say 'hi'"`, true},
	}
	for _, c := range cases {
		cond, err := ParseCond(c.cond)
		if err != nil {
			t.Errorf("%q: %v", c.cond, err)
			continue
		}
		if got := cond.Eval(value); got != c.want {
			t.Errorf("%q = %v, want %v", c.cond, got, c.want)
		}
	}
}

func TestConditionErrors(t *testing.T) {
	cases := []struct{ cond, want string }{
		{`x`, "the condition cannot be read at character 1: expected $<step>.output, $<step>.status or a quoted literal"},
		{`  $a.status`, "the condition cannot be read at character 12: expected ==, !=, < or >"},
		{`$a.status == `, "the condition cannot be read at character 14: expected $<step>.output, $<step>.status or a quoted literal"},
		{`$a.status == 'x' and`, "the condition cannot be read at character 18: expected && or || or the end"},
		{`'é' == "abc`, "the condition cannot be read at character 8: the quoted literal is not closed"},
		{`$a == 'x'`, "the condition cannot be read at character 1: expected $<step>.output, $<step>.status or a quoted literal"},
		{`$.output == 'x'`, "the condition cannot be read at character 1: expected $<step>.output, $<step>.status or a quoted literal"},
		{`($a.status == 'x')`, "the condition cannot be read at character 1: expected $<step>.output, $<step>.status or a quoted literal"},
		{`'a' == 'b' &&`, "the condition cannot be read at character 14: expected $<step>.output, $<step>.status or a quoted literal"},
		{`'a' = 'b'`, "the condition cannot be read at character 5: expected ==, !=, < or >"},
	}
	for _, c := range cases {
		_, err := ParseCond(c.cond)
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: %v\nwant %s", c.cond, err, c.want)
		}
	}
}

func TestSubstitute(t *testing.T) {
	vals := map[string]string{"a.output": `he said "hi"`, "a.status": "success"}
	value := func(r Ref) (string, bool) {
		v, ok := vals[r.Step+"."+r.Field]
		return v, ok
	}
	got, missing, err := substitute(json.RawMessage(`{"m":"[$a.output] $a.status; $a.outputs $5.00","$a.output":["$a.status",1.50e3],"n":12345678901234567890}`), KindTool, value)
	if err != nil || missing != nil {
		t.Fatal(err, missing)
	}
	want := `{"$a.output":["success",1.50e3],"m":"[he said \"hi\"] success; $a.outputs $5.00","n":12345678901234567890}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	_, missing, _ = substitute(json.RawMessage(`{"m":"$b.output"}`), KindTool, value)
	if missing == nil || missing.Step != "b" {
		t.Errorf("missing %v", missing)
	}
	got, _, _ = substitute(json.RawMessage(`{"version":"$a.output","task":"$a.status"}`), KindCapsule, value)
	if string(got) != `{"task":"success","version":"$a.output"}` {
		t.Errorf("capsule input %s", got)
	}
}

func FuzzParseCond(f *testing.F) {
	for _, s := range []string{"", `$a.status == "success"`, `'x' < "y" && $b-1.output != '' || $c_d.status > 'a'`, `$a.exit == 'x'`, `"open`, "$", "$a.", "&&", "'é'=='é'"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCond(s)
		if err != nil {
			ce, ok := err.(*CondError)
			if !ok || ce.Col < 1 || ce.Col > len([]rune(s))+1 {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		c.Eval(func(Ref) string { return "" })
		for _, r := range c.Refs() {
			if !strings.Contains(s, "$"+r.Step+"."+r.Field) {
				t.Fatalf("%q: ref %+v not in the text", s, r)
			}
		}
	})
}

func FuzzParse(f *testing.F) {
	cat := testCatalog(f)
	for _, s := range []string{`{"id":"p","steps":[]}`, `{"id":"p","steps":[{"id":"a","tool":"echo","input":{"m":"$b.output"},"depends_on":["b"]},{"id":"b","shell":"git 'x y'","if":"$a.status == 'x'"}]}`,
		`{"id":"p","steps":[{"id":"a","capsule":"worker","input":{"version":"1","task":"t"},"retries":5,"on_error":"skip"}]}`, `[]`, `{"id":1}`, `{"id":"p","steps":[{"id":"a","tool":"echo","depends_on":["a"]}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, errs := Parse(b, cat)
		if (p == nil) == (len(errs) == 0) {
			t.Fatalf("plan %v with %d errors", p != nil, len(errs))
		}
		if p == nil {
			return
		}
		// A valid plan has no cycle: settling in dependency order reaches every step.
		done := map[string]bool{}
		for progress := true; progress; {
			progress = false
			for _, s := range p.Steps {
				ok := !done[s.ID]
				for _, d := range s.DependsOn {
					ok = ok && done[d]
				}
				if ok {
					done[s.ID], progress = true, true
				}
			}
		}
		if len(done) != len(p.Steps) {
			t.Fatalf("a valid plan does not settle: %s", b)
		}
	})
}
