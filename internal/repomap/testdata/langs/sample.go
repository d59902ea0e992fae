package sample

const MaxItems = 10

var defaultName = "x"

type Store struct{ n int }

type Getter interface{ Get() int }

func NewStore() *Store { return &Store{} }

func (s *Store) Get() int { return s.n }
