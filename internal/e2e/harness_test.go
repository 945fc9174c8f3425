package e2e_test

import "github.com/murmur-go/murmur/internal/e2e"

// The end-to-end harness lives in internal/e2e; these are the short names the
// tests here were written with.
type (
	murResult    = e2e.Result
	ready        = e2e.Ready
	otlpReceiver = e2e.OTLPReceiver
)

const (
	murTimeout       = e2e.MurTimeout
	agentTranscript  = e2e.AgentTranscript
	workerTranscript = e2e.WorkerTranscript
	orchTranscript   = e2e.OrchTranscript
	fakeKey          = e2e.FakeKey
	delegatorWasm    = e2e.DelegatorWasm
)

var (
	fakeProvider           = e2e.FakeProvider
	murBin                 = e2e.MurBin
	shareCompileCache      = e2e.ShareCompileCache
	runMur                 = e2e.RunMur
	fixture                = e2e.Fixture
	capsule                = e2e.Capsule
	parseReady             = e2e.ParseReady
	traceLines             = e2e.TraceLines
	lastEnd                = e2e.LastEnd
	startMur               = e2e.StartMur
	startMurEnv            = e2e.StartMurEnv
	readReady              = e2e.ReadReady
	copyDir                = e2e.CopyDir
	publishTool            = e2e.PublishFixture
	agentProject           = e2e.AgentProject
	lastOf                 = e2e.LastOf
	types                  = e2e.Types
	rpc                    = e2e.RPC
	jsonErrorOnly          = e2e.JSONErrorOnly
	sessionsUnder          = e2e.SessionsUnder
	startRoost             = e2e.StartRoost
	replayCapsule          = e2e.ReplayCapsule
	replayCapsuleInference = e2e.ReplayCapsuleInference
	byType                 = e2e.ByType
	gone                   = e2e.Gone
	fakeModelCapsule       = e2e.FakeModelCapsule
	delegateReply          = e2e.DelegateReply
	lastMessageText        = e2e.LastMessageText
	murCmdEnv              = e2e.MurCmdEnv
	waitFor                = e2e.WaitFor
	repoRoot               = e2e.RepoRoot
	openPTY                = e2e.OpenPTY
)
