package codec

// NewAddMessageCommand builds a KAHA_ADD_MESSAGE_COMMAND with the fields the
// broker writes: transaction_info only inside a transaction, priority and
// prioritySupported always. Byte slices are referenced, not copied.
func NewAddMessageCommand(tx TxID, dest Destination, id, message []byte, priority int32, prioritySupported bool) *Command {
	c := &Command{Type: AddMessageCommand, Tx: tx, Dest: dest, MessageID: id, Message: message,
		Priority: priority, PrioritySupported: prioritySupported}
	c.Set(FieldAddDestination, FieldAddMessageID, FieldAddMessage, FieldAddPriority, FieldAddPrioritySupported)
	if tx.Kind != NoTx {
		c.Set(FieldAddTransaction)
	}
	return c
}

// NewRemoveMessageCommand builds a KAHA_REMOVE_MESSAGE_COMMAND (an ack):
// transaction_info only inside a transaction, ack when ack is not nil (the
// broker writes an empty one for unmatched durable acks), subscriptionKey
// when sub is not nil (a durable topic ack).
func NewRemoveMessageCommand(tx TxID, dest Destination, id, ack, sub []byte) *Command {
	c := &Command{Type: RemoveMessageCommand, Tx: tx, Dest: dest, MessageID: id, Ack: ack, SubscriptionKey: sub}
	c.Set(FieldRemoveDestination, FieldRemoveMessageID)
	if tx.Kind != NoTx {
		c.Set(FieldRemoveTransaction)
	}
	if ack != nil {
		c.Set(FieldRemoveAck)
	}
	if sub != nil {
		c.Set(FieldRemoveSubscriptionKey)
	}
	return c
}

// NewTraceCommand builds a KAHA_TRACE_COMMAND with the message text (the
// broker writes "LOADED <date>" when it opens the store).
func NewTraceCommand(text []byte) *Command {
	c := &Command{Type: TraceCommand, Text: text}
	c.Set(FieldTraceMessage)
	return c
}

// NewRemoveDestinationCommand builds a KAHA_REMOVE_DESTINATION_COMMAND of
// dest.
func NewRemoveDestinationCommand(dest Destination) *Command {
	c := &Command{Type: RemoveDestinationCommand, Dest: dest}
	c.Set(FieldRemoveDestinationDestination)
	return c
}
