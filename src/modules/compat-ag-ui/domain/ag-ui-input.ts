/** The parts of AG-UI 1.0's `RunAgentInput` this surface reads (`@ag-ui/core` types, camelCase). */
export interface AgUiMessage {
  id?: string;
  role: string;
  content?: unknown;
  /** `tool` messages: the call they answer. */
  toolCallId?: string;
  /** `tool` messages: the call failed. */
  error?: string;
}

export interface AgUiTool {
  name: string;
  description?: string;
  parameters?: unknown;
}

export interface AgUiResumeEntry {
  interruptId: string;
  status: 'resolved' | 'cancelled';
  payload?: unknown;
}
