package trace

// The peer file plane's lines (docs/peer-files.md). No line holds a handle:
// each names its handle_id.
const (
	TypePeerHandleMint   = "peer_handle_mint"
	TypePeerHandleRedeem = "peer_handle_redeem"
	TypePeerFileFetch    = "peer_file_fetch"
)

// PeerHandleMint is one share-file call, on the minter's side, under the
// turn's inference line.
type PeerHandleMint struct {
	TaskID      string  `json:"task_id"`
	ToolCallID  string  `json:"tool_call_id"`
	HandleID    *string `json:"handle_id"` // null when refused
	Path        string  `json:"path"`      // relative to the export root
	Bytes       int64   `json:"bytes"`
	ExpiresAtMS int64   `json:"expires_at_ms"`
	Outcome     string  `json:"outcome"` // ok or the refusal's word
	Reason      *string `json:"reason"`
}

// PeerHandleRedeem is one GET of the peer route whose handle was this
// session's, on the minter's side, under session_start.
type PeerHandleRedeem struct {
	HandleID string  `json:"handle_id"`
	Path     string  `json:"path"`
	Status   int     `json:"status"`
	Error    *string `json:"error"`
	Bytes    int64   `json:"bytes"`
	SHA256   string  `json:"sha256"`
	Remote   string  `json:"remote"`
}

// PeerFileFetch is one fetch-peer-file call, on the fetcher's side, under
// the turn's inference line.
type PeerFileFetch struct {
	TaskID     string  `json:"task_id"`
	ToolCallID string  `json:"tool_call_id"`
	From       string  `json:"from"`
	HandleID   string  `json:"handle_id"`
	Path       *string `json:"path"` // peer-in/… or null
	Bytes      int64   `json:"bytes"`
	SHA256     string  `json:"sha256"`
	Outcome    string  `json:"outcome"`
	PeerError  *string `json:"peer_error"`
	Reason     *string `json:"reason"`
}

func peerTypeOf(v any) (string, bool) {
	switch v.(type) {
	case PeerHandleMint, *PeerHandleMint:
		return TypePeerHandleMint, true
	case PeerHandleRedeem, *PeerHandleRedeem:
		return TypePeerHandleRedeem, true
	case PeerFileFetch, *PeerFileFetch:
		return TypePeerFileFetch, true
	}
	return "", false
}
