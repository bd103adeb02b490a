// Package selector parses and evaluates JMS message selectors as ActiveMQ
// 5.17.2 does.
package selector
