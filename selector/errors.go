package selector

import (
	"errors"
	"strconv"
)

// Sentinels wrapped by the errors of Parse and Match; test with errors.Is.
var (
	// ErrSyntax: ActiveMQ's lexer or parser rejects the selector
	// (TokenMgrError, ParseException).
	ErrSyntax = errors.New("syntax error")
	// ErrInvalid: the selector parses but ActiveMQ's expression factories
	// reject it ("Expression will not result in a boolean value",
	// "'NULL' cannot be compared", an ESCAPE of more than one character,
	// a hexadecimal literal over Long.MAX_VALUE, an unknown function, ...).
	ErrInvalid = errors.New("invalid selector")
	// ErrTooDeep: the selector nests deeper than MaxDepth. ActiveMQ has no
	// limit but its thread's stack (see MaxDepth).
	ErrTooDeep = errors.New("selector nests too deep")
	// ErrUnsupported: evaluating the selector needs something kahafs does
	// not reproduce (XPATH, the Java regular expressions of REGEX, REPLACE
	// and SPLIT, Java's text of a byte array or map, Java 17's text of a
	// float outside the range it was checked in). The broker's answer is
	// unknown.
	ErrUnsupported = errors.New("not supported")
	// ErrException: ActiveMQ's evaluation throws (an *EvalError says what).
	ErrException = errors.New("ActiveMQ's evaluation throws")
)

// SyntaxError is a selector ActiveMQ rejects with an
// InvalidSelectorException, or one kahafs cannot parse (ErrTooDeep).
type SyntaxError struct {
	// Offset is the byte offset in the selector of the token (or
	// character) at fault; Line and Column are the same place counted the
	// way ActiveMQ's parser (JavaCC) counts: from 1, a column per UTF-16
	// unit (a tab is one). After a "convert_string_expressions:" prefix,
	// ActiveMQ counts from the end of the prefix, kahafs from the start
	// of the selector.
	Offset, Line, Column int
	Msg                  string
	Err                  error // ErrSyntax, ErrInvalid or ErrTooDeep
}

func (e *SyntaxError) Error() string {
	return "selector: line " + strconv.Itoa(e.Line) + ", column " + strconv.Itoa(e.Column) + ": " + e.Msg
}

func (e *SyntaxError) Unwrap() error { return e.Err }

// EvalError is what evaluating a selector on a message runs into: an
// exception ActiveMQ's own evaluation throws (Err is ErrException), or
// something kahafs does not reproduce (Err is ErrUnsupported).
//
// A broker treats the exceptions differently: a javax.jms.JMSException
// (properties that do not unmarshal) is caught by the subscription, logged
// ("Selector failed to evaluate") and the message is not delivered; any
// other exception (a java.lang.RuntimeException, ClassCastException or
// NullPointerException) escapes the subscription's matches() and fails
// whatever was dispatching or recovering the message.
type EvalError struct {
	// Offset is the byte offset in the selector of the expression that
	// failed.
	Offset int
	// Exception is the Java class ActiveMQ throws ("" when unsupported).
	Exception string
	Msg       string
	Err       error // ErrException or ErrUnsupported
}

func (e *EvalError) Error() string {
	s := "selector: at offset " + strconv.Itoa(e.Offset) + ": "
	if e.Exception != "" {
		s += e.Exception + ": "
	}
	return s + e.Msg
}

func (e *EvalError) Unwrap() error { return e.Err }

// JMSException reports whether ActiveMQ throws a javax.jms.JMSException,
// which the broker's subscription catches: no delivery.
func (e *EvalError) JMSException() bool { return e.Exception == exJMS }

// Java exception classes the evaluation reports.
const (
	exRuntime     = "java.lang.RuntimeException"
	exClassCast   = "java.lang.ClassCastException"
	exNullPointer = "java.lang.NullPointerException"
	exJMS         = "javax.jms.JMSException"
)
