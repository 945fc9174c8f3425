package wasmhost

// Constructors for hand-built types in the tests.
var (
	tBool = &Type{Kind: KindBool}
	tU8   = &Type{Kind: KindU8}
	tU32  = &Type{Kind: KindU32}
	tS32  = &Type{Kind: KindS32}
	tS64  = &Type{Kind: KindS64}
	tF64  = &Type{Kind: KindF64}
	tChar = &Type{Kind: KindChar}
)

// tList returns list<elem>.
func tList(elem *Type) *Type { return &Type{Kind: KindList, Elem: elem} }

// tOption returns option<elem>.
func tOption(elem *Type) *Type { return &Type{Kind: KindOption, Elem: elem} }

// tResult returns result<ok, err>; either may be nil.
func tResult(ok, err *Type) *Type { return &Type{Kind: KindResult, Ok: ok, Err: err} }

// tTuple returns tuple<elems...>.
func tTuple(elems ...*Type) *Type { return &Type{Kind: KindTuple, Tuple: elems} }

// tRecord returns a record with the given fields.
func tRecord(fields ...Field) *Type { return &Type{Kind: KindRecord, Fields: fields} }

// tEnum returns an enum with the given case names.
func tEnum(names ...string) *Type { return &Type{Kind: KindEnum, Names: names} }

// tFlags returns flags with the given names.
func tFlags(names ...string) *Type { return &Type{Kind: KindFlags, Names: names} }

// tVariant returns a variant with the given cases.
func tVariant(cases ...Case) *Type { return &Type{Kind: KindVariant, Cases: cases} }
