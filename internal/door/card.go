package door

import "github.com/murmur-go/murmur/internal/door/doorapi"

// ExtensionURI is murmur's A2A extension, declared on every card.
const ExtensionURI = "https://murmur.nexus/a2a/capsule/v1"

// The card's JSON is written from these types rather than a2a.AgentCard
// because the card states pushNotifications: false outright, which a2a-go's
// omitempty would drop.
type cardJSON struct {
	Name                string          `json:"name"`
	Description         string          `json:"description"`
	Version             string          `json:"version"`
	SupportedInterfaces []cardInterface `json:"supportedInterfaces"`
	Capabilities        cardCaps        `json:"capabilities"`
	DefaultInputModes   []string        `json:"defaultInputModes"`
	DefaultOutputModes  []string        `json:"defaultOutputModes"`
	Skills              []cardSkill     `json:"skills"`
	// A door with network.authentication declares its bearer scheme, as
	// a2a-go v2.4.0 writes one.
	SecuritySchemes      map[string]any   `json:"securitySchemes,omitempty"`
	SecurityRequirements []map[string]any `json:"securityRequirements,omitempty"`
}

type cardInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

type cardCaps struct {
	Streaming         bool            `json:"streaming"`
	PushNotifications bool            `json:"pushNotifications"`
	Extensions        []cardExtension `json:"extensions"`
}

type cardExtension struct {
	URI      string         `json:"uri"`
	Required bool           `json:"required"`
	Params   map[string]any `json:"params"`
}

type cardCompletionError struct {
	Code     int      `json:"code"`
	Reason   string   `json:"reason"`
	Metadata []string `json:"metadata"`
}

type cardSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
}

var modes = []string{"text/plain", "application/json"}

func (s *Server) cardJSON() cardJSON {
	skills := []cardSkill{}
	if s.cfg.TaskAcceptance != AcceptNone {
		skills = append(skills, cardSkill{
			ID:          "task",
			Name:        "task",
			Description: "Run a task: the message's text and data parts are the task, the answer is the response artifact.",
			Tags:        []string{"task"},
		})
	}
	var schemes map[string]any
	var reqs []map[string]any
	if a := s.cfg.Auth; a != nil && a.OperatorToken != "" {
		schemes = map[string]any{"bearer": map[string]any{"httpAuthSecurityScheme": map[string]any{"scheme": "Bearer"}}}
		reqs = []map[string]any{{"schemes": map[string]any{"bearer": []string{}}}}
	}
	return cardJSON{
		SecuritySchemes: schemes, SecurityRequirements: reqs,
		Name:        s.cfg.Name,
		Description: "Murmur capsule " + s.cfg.Name + " " + s.cfg.Version,
		Version:     s.cfg.Version,
		SupportedInterfaces: []cardInterface{{
			URL: s.cfg.URL, ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0",
		}},
		Capabilities: cardCaps{
			Streaming:         true,
			PushNotifications: false,
			Extensions: []cardExtension{{
				URI:      ExtensionURI,
				Required: false,
				Params: map[string]any{
					"sessionId": s.cfg.SessionID,
					"completionErrors": []cardCompletionError{
						{Code: doorapi.CodeCompletionMisaddr, Reason: doorapi.ReasonCompletionMisaddressed, Metadata: []string{"addressed_session", "running_session"}},
						{Code: doorapi.CodeCompletionNotAwaited, Reason: doorapi.ReasonCompletionNotAwaited, Metadata: []string{"delegation_id"}},
					},
				},
			}},
		},
		DefaultInputModes:  modes,
		DefaultOutputModes: modes,
		Skills:             skills,
	}
}

// Card returns the agent card's JSON, exactly as GET
// /.well-known/agent-card.json serves it.
func (s *Server) Card() []byte { return append([]byte(nil), s.card...) }
