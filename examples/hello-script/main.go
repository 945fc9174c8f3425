//go:build wasip1

// Command hello-script is the example script capsule: it reads its task, invokes the
// echo-tool artifact with it and writes the answer to out/result.txt.
package main

import (
	"fmt"
	"strings"

	"github.com/murmur-go/murmur/guest"
)

// A reactor component never runs main: register the capsule from init.
func init() { guest.Capsule(run) }

func main() {}

func run() error {
	task, err := guest.ReadTask()
	if err != nil {
		return fmt.Errorf("read the task: %w", err)
	}
	task = strings.TrimSpace(task)
	if task == "" {
		task = "hello from hello-script"
	}
	res, err := guest.Invoke("echo-tool", guest.ToolInput{Data: guest.Some(task)})
	if err != nil {
		return fmt.Errorf("invoke echo-tool: %w", err)
	}
	if res.Status != guest.StatusPassed || res.Data == nil {
		return fmt.Errorf("echo-tool ended %s", res.Status)
	}
	result := fmt.Sprintf("task: %s\necho-tool: %s\n", task, *res.Data)
	if res.Summary != nil {
		result += "summary: " + *res.Summary + "\n"
	}
	if err := guest.WriteResult(result); err != nil {
		return err
	}
	fmt.Println("hello-script: wrote out/result.txt")
	return nil
}
