package engine

import (
	"github.com/dolthub/go-mysql-server/sql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/engine/dpparse"
)

// This file is the registry of dpsql statements. Each statement is one plan
// node (a file of its own, like status.go) plus one CALL procedure, its
// preparable twin. To add a statement:
//
//  1. write its node type: a sql.ExecSourceRel that also implements
//     WithResolvedChildren (statementNode), holding the parsed statement and
//     the *Engine;
//  2. add a case to plan below, returning the node and the privilege the
//     planbuilder must check before building it;
//  3. add its procedure to procedures.

// statementNode is the plan node of a dpsql statement. The parser hands it
// to GMS inside an ast.InjectedStatement; the planbuilder checks the
// statement's AuthInformation, calls WithResolvedChildren and executes the
// result.
type statementNode interface {
	sql.ExecSourceRel
	ast.Injectable
}

// authAnyone lets every authenticated user run a statement.
var authAnyone = ast.AuthInformation{AuthType: ast.AuthType_IGNORE}

// plan returns the plan node of a parsed dpsql statement and the privilege
// needed to run it.
func (e *Engine) plan(stmt dpparse.Statement) (statementNode, ast.AuthInformation, error) {
	switch s := stmt.(type) {
	case *dpparse.ShowStatus:
		return newShowStatus(e), authAnyone, nil
	case *dpparse.SetBudget:
		return e.setBudgetNode(s), authAnyone, nil
	case *dpparse.ShowBudget:
		return e.showBudgetNode(s), authAnyone, nil
	case *dpparse.ShowLedger:
		return e.showLedgerNode(s), authAnyone, nil
	case *dpparse.SetDomainBetween, *dpparse.SetDomainIn:
		return e.setDomainNode(s), authAnyone, nil
	case *dpparse.SetPublic:
		return e.setPublicNode(s), authAnyone, nil
	case *dpparse.ShowDomain:
		return e.showDomainNode(s), authAnyone, nil
	case *dpparse.GrantSynthesize:
		return e.grantSynthesizeNode(s), authAnyone, nil
	case *dpparse.RevokeSynthesize:
		return e.revokeSynthesizeNode(s), authAnyone, nil
	case *dpparse.ShowSynthesizeGrants:
		return e.showSynthesizeGrantsNode(s), authAnyone, nil
	case *dpparse.CreateSynthetic:
		return newCreateSynthetic(e, s), authAnyone, nil
	case *dpparse.SetPrivacyUnit:
		return e.setPrivacyUnitNode(s), authAnyone, nil
	case *dpparse.CreateSyntheticTables:
		return e.createSyntheticTablesNode(s), authAnyone, nil
	case *dpparse.ShowSyntheticTables:
		return &ShowSyntheticTables{e: e, db: s.DB}, authAnyone, nil
	case *dpparse.ShowMechanisms:
		return &ShowMechanisms{}, authAnyone, nil
	case *dpparse.ShowErrorBounds:
		return e.showErrorBoundsNode(s), authAnyone, nil
	case *dpparse.Backup:
		// Backup checks the SUPER privilege itself, with a precise error.
		return &Backup{e: e}, authAnyone, nil
	default:
		return nil, ast.AuthInformation{}, ErrUnsupported.New("%s is not supported by this server yet", stmt)
	}
}

// procedures are the CALL twins of the dpsql statements, served by the
// engine's provider.
func (e *Engine) procedures() []sql.ExternalStoredProcedureDetails {
	return append([]sql.ExternalStoredProcedureDetails{
		e.statusProcedure(), e.backupProcedure(), e.setPrivacyUnitProcedure(), e.explainSyntheticProcedure(),
		e.createSyntheticTablesProcedure(),
	}, append(append(e.privacyProcedures(), e.synthesisProcedures()...), append(e.showErrorBoundsProcedures(), e.queryBoundsProcedures()...)...)...)
}
