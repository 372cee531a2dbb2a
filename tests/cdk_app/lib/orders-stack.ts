import * as cdk from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';

// `cdk synth` of this stack gives cdk.out/OrdersStack.template.json (kept as synthesized).
export class OrdersStack extends cdk.Stack {
  constructor(scope: Construct, id: string, props?: cdk.StackProps) {
    super(scope, id, props);
    const charge = new lambda.Function(this, 'ChargeFunction', {
      runtime: lambda.Runtime.PYTHON_3_12,
      handler: 'index.handler',
      code: lambda.Code.fromAsset('lambda/charge'),
    });
    const chargeStep = new tasks.LambdaInvoke(this, 'Charge', {
      lambdaFunction: charge,
      resultSelector: { 'charged.$': '$.Payload.charged' },
      resultPath: '$.charge',
    });
    const ship = new sfn.Pass(this, 'Ship', {
      result: sfn.Result.fromObject({ carrier: 'ups' }),
      resultPath: '$.shipment',
    });
    new sfn.StateMachine(this, 'OrdersStateMachine', {
      definitionBody: sfn.DefinitionBody.fromChainable(chargeStep.next(ship)),
      timeout: cdk.Duration.minutes(5),
    });
  }
}
