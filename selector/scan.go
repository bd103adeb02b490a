package selector

// ActiveMQ's grammar has two syntactic lookaheads: a sign after an
// operand is an operator only when a multExpr follows it, and a unary
// plus only when a unaryExpr follows it. JavaCC decides them by scanning
// ahead without building anything: every choice tries its alternatives in
// order and takes the first that scans, every loop repeats while its body
// scans, and an optional part is taken when it scans. These functions are
// that scan (the expressions' values and types play no part); each
// returns the index of the token after what it scanned, or false. Reading
// a token the lexer could not make is the lexical error, as in JavaCC.
// A scan nesting deeper than MaxDepth (counting the parser's levels) is
// ErrTooDeep. The result of scanning a unaryExpr at a token is kept
// (p.scanned), so that the scans of a parse take time linear in its
// length, however they nest.

type scanner struct {
	p     *parser
	depth int
}

func (p *parser) scanner() *scanner { return &scanner{p: p, depth: p.depth} }

func (s *scanner) is(i int, k tokKind) bool { return s.p.at(i).k == k }

// unary scans unaryExpr.
func (s *scanner) unary(i int) (int, bool) {
	if j, ok := s.p.scanned[i]; ok {
		return j, j >= 0
	}
	s.depth++
	if s.depth > MaxDepth+1 {
		panic(parsePanic{s.p.tooDeep(s.p.at(i))})
	}
	j, ok := s.unary1(i)
	s.depth--
	if s.p.scanned == nil {
		s.p.scanned = make(map[int]int)
	}
	if !ok {
		s.p.scanned[i] = -1
	} else {
		s.p.scanned[i] = j
	}
	return j, ok
}

func (s *scanner) unary1(i int) (int, bool) {
	switch s.p.at(i).k {
	case tPlus, tMinus, tNOT:
		if j, ok := s.unary(i + 1); ok {
			return j, true
		}
	case tXPATH, tXQUERY:
		if s.is(i+1, tString) {
			return i + 2, true
		}
	case tID:
		if s.is(i+1, tLParen) {
			if j, ok := s.function(i); ok {
				return j, true
			}
		}
	}
	return s.primary(i)
}

func (s *scanner) function(i int) (int, bool) {
	j, ok := s.unary(i + 2)
	if !ok {
		return i, false
	}
	for s.is(j, tComma) {
		k, ok := s.unary(j + 1)
		if !ok {
			break
		}
		j = k
	}
	if !s.is(j, tRParen) {
		return i, false
	}
	return j + 1, true
}

func (s *scanner) primary(i int) (int, bool) {
	switch s.p.at(i).k {
	case tString, tDecimal, tHex, tOctal, tFloat, tTRUE, tFALSE, tNULL, tID:
		return i + 1, true
	case tLParen:
		j, ok := s.or(i + 1)
		if ok && s.is(j, tRParen) {
			return j + 1, true
		}
	}
	return i, false
}

// loop scans first, then op-led repetitions of next while they scan.
func (s *scanner) loop(i int, first func(int) (int, bool), ops []tokKind, next func(int) (int, bool)) (int, bool) {
	j, ok := first(i)
	if !ok {
		return i, false
	}
	for {
		k, ok := s.oneOf(j, ops, next)
		if !ok {
			return j, true
		}
		j = k
	}
}

func (s *scanner) oneOf(i int, ops []tokKind, next func(int) (int, bool)) (int, bool) {
	t := s.p.at(i).k
	for _, op := range ops {
		if t == op {
			return next(i + 1)
		}
	}
	return i, false
}

func (s *scanner) or(i int) (int, bool) {
	return s.loop(i, s.and, []tokKind{tOR}, s.and)
}

func (s *scanner) and(i int) (int, bool) {
	return s.loop(i, s.equality, []tokKind{tAND}, s.equality)
}

func (s *scanner) equality(i int) (int, bool) {
	j, ok := s.comparison(i)
	if !ok {
		return i, false
	}
	for {
		switch {
		case s.is(j, tEQ) || s.is(j, tNE):
			if k, ok := s.comparison(j + 1); ok {
				j = k
				continue
			}
		case s.is(j, tIS) && s.is(j+1, tNULL):
			j += 2
			continue
		case s.is(j, tIS) && s.is(j+1, tNOT) && s.is(j+2, tNULL):
			j += 3
			continue
		}
		return j, true
	}
}

func (s *scanner) comparison(i int) (int, bool) {
	j, ok := s.add(i)
	if !ok {
		return i, false
	}
	for {
		k, ok := s.comparisonTail(j)
		if !ok {
			return j, true
		}
		j = k
	}
}

// comparisonTail scans one repetition of comparisonExpression's loop.
func (s *scanner) comparisonTail(i int) (int, bool) {
	switch s.p.at(i).k {
	case tGT, tGE, tLT, tLE:
		return s.add(i + 1)
	case tNOT:
		switch s.p.at(i + 1).k {
		case tLIKE, tBETWEEN, tIN:
			return s.comparisonTail(i + 1)
		}
	case tLIKE:
		if !s.is(i+1, tString) {
			return i, false
		}
		if s.is(i+2, tESCAPE) && s.is(i+3, tString) {
			return i + 4, true
		}
		return i + 2, true
	case tBETWEEN:
		j, ok := s.add(i + 1)
		if !ok || !s.is(j, tAND) {
			return i, false
		}
		return s.add(j + 1)
	case tIN:
		if !s.is(i+1, tLParen) || !s.is(i+2, tString) {
			return i, false
		}
		j := i + 3
		for s.is(j, tComma) && s.is(j+1, tString) {
			j += 2
		}
		if !s.is(j, tRParen) {
			return i, false
		}
		return j + 1, true
	}
	return i, false
}

func (s *scanner) add(i int) (int, bool) {
	return s.loop(i, s.mult, []tokKind{tPlus, tMinus}, s.mult)
}

func (s *scanner) mult(i int) (int, bool) {
	return s.loop(i, s.unary, []tokKind{tStar, tSlash, tPercent}, s.unary)
}
