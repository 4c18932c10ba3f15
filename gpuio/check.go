package gpuio

// Check validates reqs as Submit does (file indexes, offsets, lengths, destinations), without
// planning or submitting anything. It reads only what Open and AttachDevice set, so it may run
// while another goroutine uses the Stack: a caller splitting one batch over several Stacks checks
// the whole batch first, so a bad request queues nothing on any of them and its error names the
// request's index in the batch.
func (s *Stack) Check(reqs []Request) error { return s.check(reqs) }
